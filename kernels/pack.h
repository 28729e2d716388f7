// Pack / unpack: gather a layer's tensors (or several merged layers) into one contiguous buffer
// of chunks, optionally scaled and narrowed to a 16-bit type; and the inverse.
//
// A layer group's chunks are consecutive in the parameter server's byte space (ps/chunk_layout.h),
// so the packed side is one buffer and each tensor is a piece of it at an element offset. The
// piece table is fixed for a layer group: the caller builds it once (and, for the CUDA twin,
// copies it to the device once) and reuses it every iteration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/cpu_isa.h"

namespace poseidon::kernels {

// The element type of the packed buffer; the tensors are always float.
enum class PackedType : uint8_t { kF32 = 1, kBf16 = 2, kF16 = 3 };

constexpr size_t packedBytes(PackedType type) { return type == PackedType::kF32 ? 4 : 2; }
// "f32", "bf16", "f16"; nullptr for a value outside the enum.
constexpr const char* packedTypeName(PackedType type) {
  switch (type) {
    case PackedType::kF32: return "f32";
    case PackedType::kBf16: return "bf16";
    case PackedType::kF16: return "f16";
  }
  return nullptr;
}

struct PackPiece {
  float* tensor = nullptr;  // the tensor's elements (read by pack, written by unpack)
  uint64_t offset = 0;      // where they sit in the packed buffer, in packed elements
  uint64_t count = 0;       // elements
};

struct PackJob {
  // Ascending by offset and not overlapping (gaps are allowed and left alone); the tensors do not
  // overlap the packed buffer. The CUDA twin wants this table in device memory: it splits the
  // packed range evenly over its blocks and finds each block's first piece by binary search.
  std::span<const PackPiece> pieces;
  void* packed = nullptr;  // packed_count elements of `type`
  uint64_t packed_count = 0;
  PackedType type = PackedType::kF32;
  // pack: packed = convert(tensor * scale); unpack: tensor = float(packed) * scale. The product
  // is one float multiplication (so 1/P scaling is the same rounding the server would do) and
  // a scale of 1 changes nothing.
  float scale = 1.0f;
  CpuIsa isa = CpuIsa::kAuto;  // the CPU twin's vector code (kernels/cpu_isa.h); same bits for any
};

// CPU twins. Throw std::invalid_argument (the message from packProblem()) for a bad job.
void packCpu(const PackJob& job);
void unpackCpu(const PackJob& job);

}  // namespace poseidon::kernels
