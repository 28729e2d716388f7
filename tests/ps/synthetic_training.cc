#include "tests/ps/synthetic_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>

namespace poseidon::testing {

model::Model syntheticModel(uint64_t extra_last_floats) {
  using model::Layer;
  return model::Model("synthetic", {Layer::other("conv1", {{"conv1.w", 1733}, {"conv1.b", 7}}),
                                    Layer::other("conv2", {{"conv2.w", 2999}, {"conv2.b", 13}}),
                                    Layer::other("fc1", {{"fc1.w", 9001}, {"fc1.b", 101}}),
                                    Layer::other("fc2", {{"fc2.w", 517}, {"fc2.b", 3 + extra_last_floats}})});
}

void initialParameters(std::span<float> params) {
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.05f * std::sin(0.37f * static_cast<float>(i));
}

void syntheticGradient(int worker, uint64_t clock, std::span<const float> params, std::span<float> grads) {
  const float phase = 0.11f * static_cast<float>(worker + 1) + 0.013f * static_cast<float>(clock);
  for (size_t i = 0; i < params.size(); ++i) {
    grads[i] = std::sin(3.0f * params[i] + phase + 0.001f * static_cast<float>(i)) * 0.1f + 0.02f * params[i];
  }
}

Status trainWorker(ps::Client& client, const WorkerRun& run, Deadline deadline) {
  std::mt19937 random(run.shuffle_seed * 7919u + static_cast<uint32_t>(run.worker));
  std::vector<size_t> order(client.layerCount());
  for (size_t l = 0; l < order.size(); ++l) order[l] = l;
  std::span<float> params = client.allParameters();
  // gradients(0) starts the gradient buffer, which is laid out exactly like the parameters.
  std::span<float> grads(client.gradients(0).data(), params.size());

  std::vector<transport::RequestPtr> requests;
  if (run.continue_from == 0) {
    if (client.startClock() == 0) initialParameters(params);  // only worker 0's copy is sent
    POSEIDON_RETURN_IF_ERROR(client.initialize(deadline));
    for (size_t l = 0; l < order.size(); ++l) requests.push_back(client.pull(l));
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
  }

  for (uint64_t clock = std::max(client.startClock(), run.continue_from); clock < run.clocks; ++clock) {
    syntheticGradient(run.worker, clock, params, grads);
    std::shuffle(order.begin(), order.end(), random);
    requests.clear();
    for (size_t layer : order) {
      requests.push_back(client.push(layer));
      if (random() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(random() % 300));
      requests.push_back(client.pull(layer));
    }
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
  }
  if (run.finish) return client.finish(deadline);
  return Status::ok();
}

std::vector<float> referenceTraining(const kernels::OptimizerConfig& config, int workers, uint64_t clocks,
                                     bool average) {
  const uint64_t elements = syntheticModel().totalParams();
  std::vector<float> params(elements), sum(elements), grads(elements);
  initialParameters(params);
  kernels::OptimizerConfig optimizer = config;
  if (average) optimizer.grad_scale = 1.0f / static_cast<float>(workers);
  std::vector<float> state0(elements, optimizer.stateInitialValue(0));
  std::vector<float> state1(elements, optimizer.stateInitialValue(1));
  for (uint64_t clock = 0; clock < clocks; ++clock) {
    for (int worker = 0; worker < workers; ++worker) {
      syntheticGradient(worker, clock, params, grads);
      for (size_t i = 0; i < elements; ++i) sum[i] = worker == 0 ? grads[i] : sum[i] + grads[i];
    }
    const float* gradient = sum.data();
    kernels::ChunkUpdate update;
    update.params = params.data();
    update.state0 = state0.data();
    update.state1 = state1.data();
    update.count = elements;
    update.gradients = std::span<const float* const>(&gradient, 1);
    update.step = optimizer.stepFor(clock);
    kernels::chunkUpdateCpu(update);
  }
  return params;
}

}  // namespace poseidon::testing
