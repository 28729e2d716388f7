// TraceModel: a zoo network as a timetable. Each layer computes for a fixed time (a worker sleeps
// it: a GPU computes, the CPU is free) and produces its real gradient, shrunk by the link scale
// (trainer/trace/link_scale.h). What the papers' network costs per iteration and how it
// overlaps with the sync is then measured through the real pipeline, without a GPU.
//
// Compute per iteration is the measured single-GPU time, batch / images per second
// (trainer/trace/single_gpu_rate.h), split over the layers by their forward FLOPs
// (model::Layer::forwardFlops: 2 M N (+M) for FC, 2 out in kh kw H W (+ out H W) for a
// convolution): a third to the forward pass and two thirds to the backward pass, which computes
// both the input's and the weights' gradient at the forward's cost each. Layers the zoo lists
// without FLOPs (batch norm, whose parameters say nothing of its compute) get no time of their
// own; the measured total already holds what they, the pooling and the activations cost, spread
// over the conv and FC layers in proportion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/layer.h"
#include "model/model.h"

namespace poseidon::trainer::trace {

// Backward FLOPs per forward FLOP: the input's gradient and the weights' gradient.
inline constexpr double kBackwardOverForward = 2.0;

struct TraceLayer {
  model::Layer real;         // the zoo's layer
  model::Layer scaled;       // what travels: the real layer at the link scale
  double forward_flops = 0;  // per sample
  double forward_s = 0;      // per iteration, the whole batch
  double backward_s = 0;
};

struct TraceModel {
  std::string name;
  uint64_t batch = 0;         // K: images per worker per iteration (the compute's)
  uint64_t scaled_batch = 0;  // K at the scale: the FC factors' rows
  double images_per_s = 0;    // one GPU's rate at this batch
  double scale = 1;           // s: real bytes / scaled bytes
  std::vector<TraceLayer> layers;

  // batch / images_per_s: every layer's forward and backward time summed.
  double computeSeconds() const;
  double forwardSeconds() const;
  uint64_t realParams() const;
  uint64_t scaledParams() const;
  // The scaled layers with the scaled batch: what the Session registers and HybComm prices.
  model::Model scaledModel() const;
};

// Fails naming the value: an invalid model, a rate that is not positive and finite, a scale below
// 1, or a model with no FLOPs at all (nothing to split the time by).
Result<TraceModel> buildTraceModel(const model::Model& model, double images_per_s, double scale);

}  // namespace poseidon::trainer::trace
