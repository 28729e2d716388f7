#include "trainer/reference/parametric_layer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "trainer/reference/seeded_init.h"

namespace poseidon::trainer::reference {

ParametricLayer::ParametricLayer(std::string name, size_t batch, SampleShape input, SampleShape output, size_t weights,
                                 size_t biases, size_t fan_in)
    : Layer(std::move(name), batch, input, output),
      weights_(weights),
      biases_(biases),
      fan_in_(fan_in),
      own_params_(weights + biases, 0.0f),
      own_grads_(weights + biases, 0.0f),
      params_(own_params_),
      grads_(own_grads_) {}

Status ParametricLayer::bind(std::span<float> params, std::span<float> grads) {
  POSEIDON_RETURN_IF_ERROR(checkSize("the bound parameters", params.size(), parameterCount()));
  POSEIDON_RETURN_IF_ERROR(checkSize("the bound gradients", grads.size(), parameterCount()));
  const auto p = reinterpret_cast<uintptr_t>(params.data());
  const auto g = reinterpret_cast<uintptr_t>(grads.data());
  const size_t bytes = parameterCount() * sizeof(float);
  if (bytes > 0 && p < g + bytes && g < p + bytes) {
    return makeStatus(StatusCode::kInvalidArgument, "layer {}: the bound parameters and gradients overlap", name());
  }
  if (params.data() != params_.data()) std::copy(params_.begin(), params_.end(), params.begin());
  params_ = params;
  grads_ = grads;
  std::vector<float>().swap(own_params_);
  std::vector<float>().swap(own_grads_);
  return Status::ok();
}

void ParametricLayer::initialize(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in_));
  fillUniform(params_, bound, rng);
}

}  // namespace poseidon::trainer::reference
