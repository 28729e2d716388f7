// A labelled set of greyscale images, and its loading from IDX files. The pixels stay the files'
// bytes and become normalised floats as a batch is gathered, as torchvision's datasets keep
// theirs: a quarter of the memory of floats (47 MB for Fashion-MNIST's training set, not 188, in
// every worker process), and the same floats, since one table of 256 maps every byte.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::trainer::data {

// Pixel p (0..255) becomes (p / 255 - mean) / std.
struct Normalisation {
  float mean = 0.0f;
  float std = 1.0f;
};

// What the files must hold; anything else is an error naming the file.
struct ImageSetShape {
  uint32_t rows = 28;
  uint32_t cols = 28;
  uint32_t count = 0;     // images (and labels) expected; 0: any
  uint32_t classes = 10;  // every label must be below this
};

class ImageSet {
 public:
  ImageSet() = default;
  // Checks sizes and labels, as loadImageSet does for files; `what` names the source in errors.
  static Result<ImageSet> fromBytes(const std::string& what, uint32_t rows, uint32_t cols, std::vector<uint8_t> pixels,
                                    std::vector<uint8_t> labels, uint32_t classes, Normalisation normalisation);

  size_t size() const { return labels_.size(); }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  size_t pixelsPerImage() const { return size_t{rows_} * cols_; }
  uint32_t classes() const { return classes_; }
  // Image i as the file's bytes, row-major; normalised(b) is the float a batch holds for byte b.
  std::span<const uint8_t> imageBytes(size_t i) const {
    return {pixels_.data() + i * pixelsPerImage(), pixelsPerImage()};
  }
  float normalised(uint8_t byte) const { return normalised_[byte]; }
  uint8_t label(size_t i) const { return labels_[i]; }
  const std::vector<uint8_t>& pixelBytes() const { return pixels_; }
  const std::vector<uint8_t>& labels() const { return labels_; }

  // Copies the images at `indices`, normalised, and their labels into caller-owned buffers (indices.size() *
  // pixelsPerImage() floats and indices.size() labels), in the order of `indices`; no allocation,
  // so a training step can call it on buffers made once.
  Status gather(std::span<const uint32_t> indices, std::span<float> images, std::span<uint8_t> labels) const;

 private:
  uint32_t rows_ = 0;
  uint32_t cols_ = 0;
  uint32_t classes_ = 0;
  std::vector<uint8_t> pixels_;
  std::array<float, 256> normalised_{};
  std::vector<uint8_t> labels_;
};

// Loads gzip IDX images and labels (see idx_file.h) and checks them against `shape`: dims,
// count, labels below shape.classes, as many images as labels.
Result<ImageSet> loadImageSet(const std::string& images_path, const std::string& labels_path,
                              const ImageSetShape& shape, Normalisation normalisation);

}  // namespace poseidon::trainer::data
