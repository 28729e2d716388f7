#include "trainer/reference/layer.h"

#include <utility>

#include "trainer/reference/blas.h"

namespace poseidon::trainer::reference {

Layer::Layer(std::string name, size_t batch, SampleShape input, SampleShape output, const FloatMemory& memory)
    : name_(std::move(name)), batch_(batch), input_(input), output_(output), memory_(&memory) {
  ensureBlasThreadsChosen();
}

Status Layer::checkSize(const char* what, size_t size, size_t expected) const {
  if (size == expected) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "layer {}: {} has {} floats, expected {} (batch {})", name_, what,
                    size, expected, batch_);
}

Status Layer::checkForward(std::span<const float> x, std::span<float> y) const {
  POSEIDON_RETURN_IF_ERROR(checkSize("the input", x.size(), inputSize()));
  return checkSize("the output", y.size(), outputSize());
}

Status Layer::checkBackward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                            std::span<float> dx) const {
  POSEIDON_RETURN_IF_ERROR(checkSize("the input", x.size(), inputSize()));
  POSEIDON_RETURN_IF_ERROR(checkSize("the output", y.size(), outputSize()));
  POSEIDON_RETURN_IF_ERROR(checkSize("the output gradient", dy.size(), outputSize()));
  if (dx.empty()) return Status::ok();
  return checkSize("the input gradient", dx.size(), inputSize());
}

}  // namespace poseidon::trainer::reference
