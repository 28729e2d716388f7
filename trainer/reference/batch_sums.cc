#include "trainer/reference/batch_sums.h"

namespace poseidon::trainer::reference {

void sumOverBatch(std::span<const float> dy, size_t batch, size_t channels, size_t plane, std::span<float> out) {
  for (size_t c = 0; c < channels; ++c) {
    double sum = 0.0;
    for (size_t k = 0; k < batch; ++k) {
      const float* row = dy.data() + (k * channels + c) * plane;
      for (size_t p = 0; p < plane; ++p) sum += static_cast<double>(row[p]);
    }
    out[c] = static_cast<float>(sum);
  }
}

}  // namespace poseidon::trainer::reference
