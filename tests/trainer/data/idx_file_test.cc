// Every bad input to the IDX reader is a Status naming the file, the value and what was expected:
// synthetic gzip files written into a temp dir.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/mesh.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/image_set.h"

namespace poseidon::trainer::data {
namespace {

using poseidon::testing::TempDir;

void putBig32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

std::vector<uint8_t> idxBytes(uint32_t magic, const std::vector<uint32_t>& dims, size_t payload, uint8_t value = 7) {
  std::vector<uint8_t> out;
  putBig32(out, magic);
  for (uint32_t d : dims) putBig32(out, d);
  out.insert(out.end(), payload, value);
  return out;
}

std::string writeGzip(const TempDir& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir.path() + "/" + name;
  gzFile file = gzopen(path.c_str(), "wb");
  EXPECT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  }
  EXPECT_EQ(gzclose(file), Z_OK);
  return path;
}

std::string writeRaw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::vector<uint8_t> readRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expectError(const Status& status, const std::vector<std::string>& parts) {
  ASSERT_FALSE(status.isOk());
  for (const std::string& part : parts) EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
}

constexpr uint32_t kImagesMagic = 0x803;
constexpr uint32_t kLabelsMagic = 0x801;

TEST(IdxFile, ReadsImagesAndLabels) {
  TempDir dir;
  const std::string images = writeGzip(dir, "i.gz", idxBytes(kImagesMagic, {3, 2, 4}, 24));
  Result<IdxArray> array = readIdxGzFile(images, IdxKind::kImages);
  ASSERT_TRUE(array) << array.status().toString();
  EXPECT_EQ(array->dims, (std::vector<uint32_t>{3, 2, 4}));
  EXPECT_EQ(array->values.size(), 24u);
  const std::string labels = writeGzip(dir, "l.gz", idxBytes(kLabelsMagic, {5}, 5, 3));
  Result<IdxArray> label_array = readIdxGzFile(labels, IdxKind::kLabels);
  ASSERT_TRUE(label_array) << label_array.status().toString();
  EXPECT_EQ(label_array->values, (std::vector<uint8_t>(5, 3)));
}

TEST(IdxFile, WrongMagicNamesFileValueAndExpectation) {
  TempDir dir;
  const std::string path = writeGzip(dir, "train-images-idx3-ubyte.gz", idxBytes(kLabelsMagic, {3}, 3));
  expectError(readIdxGzFile(path, IdxKind::kImages).status(),
              {path, "magic 0x00000801, expected 0x00000803 (an IDX image file)"});
}

TEST(IdxFile, WrongDimsCountIsAMagicError) {
  TempDir dir;  // 0x0802: two dims where an image file has three
  const std::string path = writeGzip(dir, "two_dims.gz", idxBytes(0x802, {3, 784}, 3 * 784));
  expectError(readIdxGzFile(path, IdxKind::kImages).status(), {path, "magic 0x00000802, expected 0x00000803"});
}

TEST(IdxFile, TruncatedPayload) {
  TempDir dir;
  const std::string path = writeGzip(dir, "short.gz", idxBytes(kImagesMagic, {3, 2, 4}, 23));
  expectError(readIdxGzFile(path, IdxKind::kImages).status(),
              {path, "payload of 23 bytes, expected 24 for dims 3 x 2 x 4 (truncated)"});
}

TEST(IdxFile, TrailingBytesAfterPayload) {
  TempDir dir;
  const std::string path = writeGzip(dir, "long.gz", idxBytes(kLabelsMagic, {4}, 6));
  expectError(readIdxGzFile(path, IdxKind::kLabels).status(), {path, "payload of 6 bytes, expected 4", "trailing"});
}

TEST(IdxFile, HeaderShorterThanItsDims) {
  TempDir dir;
  const std::string path = writeGzip(dir, "header.gz", {0, 0, 8, 3, 0, 0});
  expectError(readIdxGzFile(path, IdxKind::kImages).status(), {path, "6 bytes, too short for the 16-byte header"});
  const std::string empty = writeGzip(dir, "empty.gz", {});
  expectError(readIdxGzFile(empty, IdxKind::kLabels).status(), {empty, "0 bytes, too short for the IDX magic"});
}

TEST(IdxFile, HugeDimsDoNotOverflow) {
  TempDir dir;
  const std::string path = writeGzip(dir, "huge.gz", idxBytes(kImagesMagic, {0xffffffff, 0xffffffff, 0xffffffff}, 8));
  expectError(readIdxGzFile(path, IdxKind::kImages).status(), {path, "payload of 8 bytes", "truncated"});
}

TEST(IdxFile, MissingFile) {
  TempDir dir;
  const std::string path = dir.path() + "/absent-images-idx3-ubyte.gz";
  const Status status = readIdxGzFile(path, IdxKind::kImages).status();
  expectError(status, {path, "cannot open", "No such file"});
  EXPECT_EQ(status.code(), StatusCode::kIoError);
}

TEST(IdxFile, NotGzip) {
  TempDir dir;
  const std::string path = writeRaw(dir.path() + "/plain.idx", idxBytes(kImagesMagic, {1, 2, 2}, 4));
  expectError(readIdxGzFile(path, IdxKind::kImages).status(),
              {path, "not a gzip file (first bytes 00 00, expected 1f 8b)"});
  const std::string tiny = writeRaw(dir.path() + "/tiny", {0x1f});
  expectError(readIdxGzFile(tiny, IdxKind::kImages).status(),
              {tiny, "not a gzip file (1 bytes, shorter than the 1f 8b magic)"});
}

TEST(IdxFile, TruncatedGzipStream) {
  TempDir dir;
  std::vector<uint8_t> gz = readRaw(writeGzip(dir, "whole.gz", idxBytes(kImagesMagic, {10, 28, 28}, 7840, 1)));
  gz.resize(gz.size() - 12);  // into the deflate data: the trailer and some of the stream go
  const std::string path = writeRaw(dir.path() + "/cut.gz", gz);
  expectError(readIdxGzFile(path, IdxKind::kImages).status(), {path, "truncated gzip stream"});
}

TEST(IdxFile, CorruptGzipStream) {
  TempDir dir;
  std::vector<uint8_t> gz = readRaw(writeGzip(dir, "whole.gz", idxBytes(kLabelsMagic, {100}, 100, 1)));
  gz[gz.size() - 6] ^= 0xff;  // the stored CRC-32 of the data
  const std::string path = writeRaw(dir.path() + "/bad_crc.gz", gz);
  expectError(readIdxGzFile(path, IdxKind::kLabels).status(), {path, "corrupt gzip stream"});
}

TEST(IdxFile, GarbageAfterGzipStream) {
  TempDir dir;
  std::vector<uint8_t> gz = readRaw(writeGzip(dir, "whole.gz", idxBytes(kLabelsMagic, {4}, 4, 1)));
  gz.insert(gz.end(), {1, 2, 3});
  const std::string path = writeRaw(dir.path() + "/tail.gz", gz);
  expectError(readIdxGzFile(path, IdxKind::kLabels).status(), {path, "3 bytes after the end of the gzip stream"});
}

struct ImageFiles {
  std::string images;
  std::string labels;
};

ImageFiles writeSet(const TempDir& dir, uint32_t images, uint32_t rows, uint32_t cols, std::vector<uint8_t> labels) {
  std::vector<uint8_t> label_bytes = idxBytes(kLabelsMagic, {static_cast<uint32_t>(labels.size())}, 0);
  label_bytes.insert(label_bytes.end(), labels.begin(), labels.end());
  return {
      writeGzip(dir, "set-images.gz", idxBytes(kImagesMagic, {images, rows, cols}, size_t{images} * rows * cols, 255)),
      writeGzip(dir, "set-labels.gz", label_bytes)};
}

TEST(ImageSetFiles, LoadsAndNormalises) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 3, 28, 28, {0, 9, 4});
  Result<ImageSet> set = loadImageSet(files.images, files.labels, ImageSetShape{}, Normalisation{0.5f, 0.25f});
  ASSERT_TRUE(set) << set.status().toString();
  EXPECT_EQ(set->size(), 3u);
  EXPECT_EQ(set->label(1), 9);
  EXPECT_EQ(set->imageBytes(2)[783], 255);
  EXPECT_FLOAT_EQ(set->normalised(set->imageBytes(2)[783]), 2.0f);  // (255/255 - 0.5) / 0.25
}

// The floats a batch gets are what the set held as floats before it kept bytes: exactly
// (p / 255 - mean) / std for every byte p, at the image's place in the batch.
TEST(ImageSetBytes, GatherNormalisesEveryByteExactlyInPlace) {
  const Normalisation n{0.2860406f, 0.3530242f};
  std::vector<uint8_t> pixels(256 * 2);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i < 256 ? i : 511 - i);
  Result<ImageSet> set = ImageSet::fromBytes("bytes", 16, 16, pixels, {3, 5}, 10, n);
  ASSERT_TRUE(set) << set.status().toString();
  for (int p = 0; p < 256; ++p) {
    const float expected = (static_cast<float>(p) / 255.0f - n.mean) / n.std;
    ASSERT_EQ(set->normalised(static_cast<uint8_t>(p)), expected) << p;  // bit for bit, not FLOAT_EQ
  }
  std::vector<float> images(2 * 256);
  std::vector<uint8_t> labels(2);
  ASSERT_TRUE(set->gather(std::vector<uint32_t>{1, 0}, images, labels).isOk());
  EXPECT_EQ(labels, (std::vector<uint8_t>{5, 3}));
  for (size_t j = 0; j < 256; ++j) {
    ASSERT_EQ(images[j], set->normalised(static_cast<uint8_t>(255 - j))) << j;  // image 1 first
    ASSERT_EQ(images[256 + j], set->normalised(static_cast<uint8_t>(j))) << j;
  }
}

TEST(ImageSetFiles, WrongImageSize) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 2, 32, 28, {1, 2});
  expectError(loadImageSet(files.images, files.labels, ImageSetShape{}, {}).status(),
              {files.images, "images of 32x28, expected 28x28"});
}

TEST(ImageSetFiles, WrongCount) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 2, 28, 28, {1, 2});
  ImageSetShape shape;
  shape.count = 60000;
  expectError(loadImageSet(files.images, files.labels, shape, {}).status(), {files.images, "2 images, expected 60000"});
}

TEST(ImageSetFiles, LabelOutOfRange) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 3, 28, 28, {1, 10, 2});
  expectError(loadImageSet(files.images, files.labels, ImageSetShape{}, {}).status(),
              {files.labels, "label 10 at index 1, expected below 10"});
}

TEST(ImageSetFiles, ImageAndLabelCountsDiffer) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 3, 28, 28, {1, 2});
  expectError(loadImageSet(files.images, files.labels, ImageSetShape{}, {}).status(),
              {files.labels, "2 labels, expected 3 (the images in " + files.images + ")"});
}

TEST(ImageSetFiles, GatherChecksBuffersAndIndices) {
  TempDir dir;
  const ImageFiles files = writeSet(dir, 2, 28, 28, {1, 2});
  Result<ImageSet> set = loadImageSet(files.images, files.labels, ImageSetShape{}, {});
  ASSERT_TRUE(set) << set.status().toString();
  std::vector<float> images(2 * 784);
  std::vector<uint8_t> labels(2);
  const std::vector<uint32_t> indices = {1, 0};
  ASSERT_TRUE(set->gather(indices, images, labels).isOk());
  EXPECT_EQ(labels, (std::vector<uint8_t>{2, 1}));
  EXPECT_EQ(images, std::vector<float>(2 * 784, 1.0f));  // every byte 255: 255 / 255, mean 0, std 1
  expectError(set->gather(std::vector<uint32_t>{0, 2}, images, labels), {"image index 2", "expected below 2"});
  expectError(set->gather(std::vector<uint32_t>{0}, images, labels), {"expected 784 and 1"});
}

}  // namespace
}  // namespace poseidon::trainer::data
