// LayerRegistration: what a trainer tells the library about one of its layers (Session::addLayer).
//
// A layer is the unit of synchronisation: what one step of the backward pass produces. Its
// parameters live in the trainer's memory as ONE buffer, in the order of model::Layer's tensors
// (the weight, then the bias): the library updates them there in place, so the trainer's forward
// pass reads them without a copy. (A framework whose layers keep weight and bias apart makes both
// views of one flat buffer per layer, as PyTorch DDP does with its gradient buckets.)
//
// What the library reads each iteration, from gradientReady() until the layer's next
// waitForParameters() returns:
// - a fully-connected layer (y = W x + b, W of M outputs x N inputs): its sufficient factors,
//   the layer's input X and the gradient of its output dY, K samples each (the rank-K gradient
//   dW = dY^T X is formed by the library, or never formed at all when SFB carries the factors;
//   [Poseidon ATC'17] section 3.2). The bias gradient is the column sums of dY: no buffer needed.
// - any other layer: the gradient of its parameters, in the parameters' layout.
// Buffers may be host or GPU memory (all of one layer's alike): a GPU layer is synced through
// pinned host staging on copy streams ordered after the trainer's compute stream
// (trainer/wfbp/device_staging.h; SessionOptions::compute_stream).
// Gradients are of the worker's own mean loss over its K samples; the library averages them over
// the workers, so P workers of batch K train like one process of batch P*K.
#pragma once

#include <span>
#include <string>

#include "common/status.h"
#include "model/layer.h"

namespace poseidon::trainer {

struct LayerRegistration {
  std::string name;  // unique in the model; no , ; = : + or white space
  model::LayerKind kind = model::LayerKind::kOther;
  model::FcShape fc;      // kFullyConnected: rows = M outputs, cols = N inputs, bias
  model::ConvShape conv;  // kConvolution: the shape (for HybComm's costs and the start-up check)

  std::span<float> params;  // weight then bias: model::Layer's params() floats, updated in place

  // kFullyConnected: X and dY, batch-major (K x N and K x M, as PyTorch and Caffe store them)
  // unless feature_major (N x K and M x K).
  std::span<const float> input;
  std::span<const float> output_gradient;
  bool feature_major = false;

  // Any other kind: d loss / d params, params.size() floats.
  std::span<const float> gradient;
};

// The model::Layer the registration describes: an FC layer from fc, a convolution from conv, any
// other layer as one tensor of params.size() floats.
model::Layer describeLayer(const LayerRegistration& layer);

// Checks the buffers against the shape and K, naming the layer, the buffer, its size and the size
// expected ("layer 'fc1': output_gradient has 640 floats, expected K x M = 64 x 512 = 32768").
Status validateRegistration(const LayerRegistration& layer, uint64_t batch);

}  // namespace poseidon::trainer
