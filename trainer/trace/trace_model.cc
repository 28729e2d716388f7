#include "trainer/trace/trace_model.h"

#include <fmt/format.h>

#include <cmath>

#include "trainer/trace/link_scale.h"

namespace poseidon::trainer::trace {

double TraceModel::computeSeconds() const {
  double seconds = 0;
  for (const TraceLayer& layer : layers) seconds += layer.forward_s + layer.backward_s;
  return seconds;
}

double TraceModel::forwardSeconds() const {
  double seconds = 0;
  for (const TraceLayer& layer : layers) seconds += layer.forward_s;
  return seconds;
}

uint64_t TraceModel::realParams() const {
  uint64_t params = 0;
  for (const TraceLayer& layer : layers) params += layer.real.params();
  return params;
}

uint64_t TraceModel::scaledParams() const {
  uint64_t params = 0;
  for (const TraceLayer& layer : layers) params += layer.scaled.params();
  return params;
}

model::Model TraceModel::scaledModel() const {
  std::vector<model::Layer> scaled;
  scaled.reserve(layers.size());
  for (const TraceLayer& layer : layers) scaled.push_back(layer.scaled);
  return model::Model(name + "-trace", std::move(scaled), scaled_batch);
}

Result<TraceModel> buildTraceModel(const model::Model& model, double images_per_s, double scale) {
  POSEIDON_RETURN_IF_ERROR(model.validate());
  if (!std::isfinite(images_per_s) || images_per_s <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "model '{}': {} images/s: expected a positive rate", model.name(),
                      images_per_s);
  }
  const double flops = model.forwardFlops();
  if (!(flops > 0)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "model '{}': no layer has forward FLOPs (no FC or convolution), nothing to split the "
                      "compute time by",
                      model.name());
  }
  TraceModel trace{.name = model.name(),
                   .batch = model.batch(),
                   .scaled_batch = scaledBatch(model.batch(), scale),
                   .images_per_s = images_per_s,
                   .scale = scale};
  const double iteration_s = static_cast<double>(model.batch()) / images_per_s;
  const double forward_share = 1 / (1 + kBackwardOverForward);
  for (const model::Layer& layer : model.layers()) {
    auto scaled = scaleLayer(layer, scale);
    if (!scaled) return scaled.status().withContext(fmt::format("model '{}'", model.name()));
    const double share = layer.forwardFlops() / flops;
    trace.layers.push_back({.real = layer,
                            .scaled = std::move(*scaled),
                            .forward_flops = layer.forwardFlops(),
                            .forward_s = iteration_s * share * forward_share,
                            .backward_s = iteration_s * share * (1 - forward_share)});
  }
  return trace;
}

}  // namespace poseidon::trainer::trace
