#include "trainer/data/image_set.h"

#include <algorithm>

#include "trainer/data/idx_file.h"

namespace poseidon::trainer::data {

Result<ImageSet> ImageSet::fromBytes(const std::string& what, uint32_t rows, uint32_t cols, std::vector<uint8_t> pixels,
                                     std::vector<uint8_t> labels, uint32_t classes, Normalisation normalisation) {
  const size_t per_image = size_t{rows} * cols;
  if (per_image == 0 || pixels.size() != per_image * labels.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} pixel bytes for {} labels of {}x{} images, expected {}",
                      what, pixels.size(), labels.size(), rows, cols, per_image * labels.size());
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] >= classes) {
      return makeStatus(StatusCode::kInvalidArgument, "{}: label {} at index {}, expected below {}", what, labels[i], i,
                        classes);
    }
  }
  if (!(normalisation.std > 0.0f)) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: normalisation std {}, expected > 0", what, normalisation.std);
  }
  ImageSet set;
  // 256 possible inputs: one table makes every pixel the same float whichever path computes it.
  for (int p = 0; p < 256; ++p) {
    set.normalised_[p] = (static_cast<float>(p) / 255.0f - normalisation.mean) / normalisation.std;
  }
  set.rows_ = rows;
  set.cols_ = cols;
  set.classes_ = classes;
  set.labels_ = std::move(labels);
  set.pixels_ = std::move(pixels);
  return set;
}

Status ImageSet::gather(std::span<const uint32_t> indices, std::span<float> images, std::span<uint8_t> labels) const {
  if (images.size() != indices.size() * pixelsPerImage() || labels.size() != indices.size()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "batch buffers of {} floats and {} labels for {} images, expected {} and {}", images.size(),
                      labels.size(), indices.size(), indices.size() * pixelsPerImage(), indices.size());
  }
  for (size_t b = 0; b < indices.size(); ++b) {
    const uint32_t i = indices[b];
    if (i >= size()) {
      return makeStatus(StatusCode::kInvalidArgument, "image index {} at batch position {}, expected below {}", i, b,
                        size());
    }
    std::span<const uint8_t> src = imageBytes(i);
    std::transform(src.begin(), src.end(), images.begin() + static_cast<std::ptrdiff_t>(b * pixelsPerImage()),
                   [this](uint8_t byte) { return normalised_[byte]; });
    labels[b] = labels_[i];
  }
  return Status::ok();
}

Result<ImageSet> loadImageSet(const std::string& images_path, const std::string& labels_path,
                              const ImageSetShape& shape, Normalisation normalisation) {
  Result<IdxArray> images = readIdxGzFile(images_path, IdxKind::kImages);
  if (!images) return images.status();
  Result<IdxArray> labels = readIdxGzFile(labels_path, IdxKind::kLabels);
  if (!labels) return labels.status();
  const std::vector<uint32_t>& dims = images->dims;
  if (dims[1] != shape.rows || dims[2] != shape.cols) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: images of {}x{}, expected {}x{}", images_path, dims[1],
                      dims[2], shape.rows, shape.cols);
  }
  if (shape.count != 0 && dims[0] != shape.count) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} images, expected {}", images_path, dims[0], shape.count);
  }
  if (labels->dims[0] != dims[0]) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: {} labels, expected {} (the images in {})", labels_path,
                      labels->dims[0], dims[0], images_path);
  }
  return ImageSet::fromBytes(labels_path, shape.rows, shape.cols, std::move(images->values), std::move(labels->values),
                             shape.classes, normalisation);
}

}  // namespace poseidon::trainer::data
