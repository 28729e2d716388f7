// IDX files (the MNIST / Fashion-MNIST format): a big-endian header, then unsigned bytes.
//
//   magic u32: 0x00000803 for images (3 dims: count, rows, cols), 0x00000801 for labels (1 dim: count)
//              (two zero bytes, type 0x08 = unsigned byte, the number of dimensions)
//   dims  u32 x ndims, big-endian
//   payload: the product of the dims, in bytes, and nothing after it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::trainer::data {

enum class IdxKind { kImages, kLabels };

struct IdxArray {
  std::vector<uint32_t> dims;   // {count, rows, cols} for images, {count} for labels
  std::vector<uint8_t> values;  // row-major, dims' product of them
};

// Parses decompressed IDX bytes; `name` (the file) starts every error message.
Result<IdxArray> parseIdx(const std::string& name, const std::vector<uint8_t>& bytes, IdxKind kind);

// Reads a gzip-compressed IDX file and parses it.
Result<IdxArray> readIdxGzFile(const std::string& path, IdxKind kind);

}  // namespace poseidon::trainer::data
