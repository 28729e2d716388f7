// Tensor: one named block of float32 parameters, the unit the parameter server lays out.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace poseidon::model {

// Largest float count accepted for a tensor, a layer or a whole model: 2^53, so every count stays
// exact in a double (the cost model prices in doubles) and sums of counts cannot wrap.
inline constexpr uint64_t kMaxFloats = uint64_t{1} << 53;

struct Tensor {
  // Unique within a model: "<layer>.weight", "<layer>.bias", or the layer's own name for a layer
  // of one tensor written as a bare count.
  std::string name;
  uint64_t floats = 0;
  // Dimensions, outermost first, whose product is `floats`: FC weight {M, N}, conv weight
  // {out, in per group, kh, kw}, a bias {M}; a tensor known only by its count is {floats}.
  std::vector<uint64_t> shape;

  bool operator==(const Tensor&) const = default;
};

// a * b, or kMaxFloats + 1 when the product exceeds kMaxFloats: a layer built from command-line
// numbers never wraps, and validation names it as too large.
inline uint64_t boundedProduct(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kMaxFloats / b) return kMaxFloats + 1;
  return a * b;
}

// A tensor of the given dimensions, its float count their (bounded) product.
Tensor shapedTensor(std::string name, std::vector<uint64_t> shape);

}  // namespace poseidon::model
