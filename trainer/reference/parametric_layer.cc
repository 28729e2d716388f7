#include "trainer/reference/parametric_layer.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {

ParametricLayer::ParametricLayer(std::string name, size_t batch, SampleShape input, SampleShape output, size_t weights,
                                 size_t biases, size_t fan_in, const FloatMemory& memory)
    : Layer(std::move(name), batch, input, output, memory), weights_(weights), biases_(biases), fan_in_(fan_in) {}

Status ParametricLayer::allocateParameters() {
  for (FloatBlock* block : {&own_params_, &own_grads_}) {
    Result<FloatBlock> allocated = memory().allocate(parameterCount());
    if (!allocated.isOk()) return allocated.status().withContext("layer " + name());
    *block = std::move(allocated).value();
  }
  params_ = own_params_.span();
  grads_ = own_grads_.span();
  return Status::ok();
}

Status ParametricLayer::bind(std::span<float> params, std::span<float> grads) {
  POSEIDON_RETURN_IF_ERROR(checkSize("the bound parameters", params.size(), parameterCount()));
  POSEIDON_RETURN_IF_ERROR(checkSize("the bound gradients", grads.size(), parameterCount()));
  const auto p = reinterpret_cast<uintptr_t>(params.data());
  const auto g = reinterpret_cast<uintptr_t>(grads.data());
  const size_t bytes = parameterCount() * sizeof(float);
  if (bytes > 0 && p < g + bytes && g < p + bytes) {
    return makeStatus(StatusCode::kInvalidArgument, "layer {}: the bound parameters and gradients overlap", name());
  }
  if (params.data() != params_.data()) {
    POSEIDON_RETURN_IF_ERROR(memory().copy(params_, params).withContext("layer " + name() + ": bind"));
  }
  params_ = params;
  grads_ = grads;
  own_params_ = FloatBlock();
  own_grads_ = FloatBlock();
  return Status::ok();
}

Status ParametricLayer::initialize(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in_));
  std::vector<float> values(parameterCount());
  fillUniform(values, bound, rng);
  return memory().upload(values, params_).withContext("layer " + name() + ": initialize");
}

}  // namespace poseidon::trainer::reference
