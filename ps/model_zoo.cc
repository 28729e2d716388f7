#include "ps/model_zoo.h"

#include <fmt/format.h>

namespace poseidon::ps {

std::vector<TensorSpec> vgg19(uint64_t classes) {
  // Output channels of the 16 conv layers in order; each takes the previous one's (3 first).
  const uint64_t conv[] = {64, 64, 128, 128, 256, 256, 256, 256, 512, 512, 512, 512, 512, 512, 512, 512};
  std::vector<TensorSpec> tensors;
  uint64_t in = 3;
  int index = 1;
  for (uint64_t out : conv) {
    tensors.push_back({fmt::format("conv{}.weight", index), 3 * 3 * in * out});
    tensors.push_back({fmt::format("conv{}.bias", index), out});
    in = out;
    ++index;
  }
  const uint64_t fc[][2] = {{25088, 4096}, {4096, 4096}, {4096, classes}};
  index = 6;
  for (const auto& shape : fc) {
    tensors.push_back({fmt::format("fc{}.weight", index), shape[0] * shape[1]});
    tensors.push_back({fmt::format("fc{}.bias", index), shape[1]});
    ++index;
  }
  return tensors;
}

}  // namespace poseidon::ps
