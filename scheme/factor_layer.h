// FactorLayer: a fully-connected layer as the factor schemes (SFB, Adam) see it.
//
// The weight is rows x cols (M x N); each worker's gradient is U V^T with U = dL/dY (M x K) and
// V = X (N x K), K the worker's batch (the rank of its gradient) [Poseidon ATC'17] section 3.2.
#pragma once

#include <cstddef>
#include <string>

namespace poseidon::scheme {

struct FactorLayer {
  std::string name;
  size_t rows = 0;  // M
  size_t cols = 0;  // N
  size_t rank = 0;  // K
};

}  // namespace poseidon::scheme
