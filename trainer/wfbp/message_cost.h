// MessageCost: the time of one message of M bytes, T(M) = a + b M ([MG-WFBP] section II-C, its
// all-reduce cost T_ar(M) with y-intercept a and slope b). With a > 0, T(M1) + T(M2) > T(M1 + M2)
// (its Eq. 10): one merged message saves a latency, which is what merging layers trades against
// starting their communication later.
#pragma once

#include <cstdint>

namespace poseidon::trainer {

struct MessageCost {
  double latency_s = 0;         // a: paid once per message, whatever its size
  double seconds_per_byte = 0;  // b: 1 / the effective rate (transmission and reduction per byte)

  double seconds(uint64_t bytes) const { return latency_s + seconds_per_byte * static_cast<double>(bytes); }
};

}  // namespace poseidon::trainer
