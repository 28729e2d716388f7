// Layer: a unit of synchronisation, what one backprop step produces, with its kind as a field.
//
// The kind decides how a layer may travel: a fully-connected layer's gradient is, per worker, of
// rank at most K (U V^T with U = dL/dY, M x K, and V = X, N x K: the sufficient factors of
// [Poseidon 2015] and [Poseidon ATC'17]); a convolution's or any other layer's is not and goes
// as a full matrix (PS or ring). A convolution also carries what its forward FLOPs need, so a
// network's compute can be split over its layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/tensor.h"

namespace poseidon::model {

enum class LayerKind { kFullyConnected, kConvolution, kOther };

// "fc", "conv", "other": also the section names of the model spec (model/spec.h).
const char* layerKindName(LayerKind kind);

struct FcShape {
  uint64_t rows = 0;  // M: outputs (U is M x K)
  uint64_t cols = 0;  // N: inputs (V is N x K)
  // A bias of M floats. The papers' formulas price the weight only: SFB recovers the bias
  // gradient from U (its row sums) at no extra traffic, PS carries the M floats next to M*N.
  bool bias = false;

  bool operator==(const FcShape&) const = default;
};

struct ConvShape {
  uint64_t out_channels = 0;
  uint64_t in_channels = 0;  // per group: the weight is out x in x kernel_h x kernel_w
  uint64_t kernel_h = 0;
  uint64_t kernel_w = 0;
  uint64_t groups = 1;  // AlexNet's two-GPU split: each group sees in_channels of the input
  uint64_t stride = 1;
  uint64_t out_h = 0;  // the output feature map, so forward FLOPs follow
  uint64_t out_w = 0;
  bool bias = false;  // one per output channel

  bool operator==(const ConvShape&) const = default;
};

// A tensor of an "other" layer given by name and count (no shape is known beyond the count).
struct NamedCount {
  std::string name;
  uint64_t floats = 0;
};

class Layer {
 public:
  Layer() = default;
  // Tensors "<name>.weight" (rows x cols), then "<name>.bias" (rows) when `bias`.
  static Layer fullyConnected(std::string name, uint64_t rows, uint64_t cols, bool bias);
  // Tensors "<name>.weight" (out x in x kh x kw), then "<name>.bias" (out) when shape.bias.
  static Layer convolution(std::string name, const ConvShape& shape);
  // One tensor named as the layer: what a bare parameter count describes.
  static Layer other(std::string name, uint64_t floats);
  // "<name>.weight" and "<name>.bias": batch norm's scale and shift, for example.
  static Layer other(std::string name, uint64_t weight, uint64_t bias);
  // Any tensors, in the order given.
  static Layer other(std::string name, const std::vector<NamedCount>& tensors);

  const std::string& name() const { return name_; }
  LayerKind kind() const { return kind_; }
  bool isFullyConnected() const { return kind_ == LayerKind::kFullyConnected; }
  bool isConvolution() const { return kind_ == LayerKind::kConvolution; }
  const FcShape& fc() const { return fc_; }        // all zero unless fully connected
  const ConvShape& conv() const { return conv_; }  // all zero unless a convolution
  // Weight then bias where present; model order.
  const std::vector<Tensor>& tensors() const { return tensors_; }

  // Every parameter, bias included.
  uint64_t params() const;
  // Floats of the gradient a full-matrix scheme (PS, ring) is priced at: M*N for FC (the
  // weight, as the papers price it), every parameter otherwise.
  uint64_t denseFloats() const;
  // Forward FLOPs for one sample, a multiply-add counting two: 2*M*N (+M) for FC,
  // 2 * out * in * kh * kw * out_h * out_w (+ out * out_h * out_w) for a convolution, 0 for
  // others (their compute is not known from their parameters).
  double forwardFlops() const;

  // Fails, naming the layer and the value: an empty name or one with a character the model spec
  // uses (, ; = : + or white space), a dimension < 1, groups not dividing the output channels, no
  // tensors, a tensor of 0 floats, or more than 2^53 floats in a tensor or the layer.
  Status validate() const;

  bool operator==(const Layer&) const = default;

 private:
  std::string name_;
  LayerKind kind_ = LayerKind::kOther;
  FcShape fc_;
  ConvShape conv_;
  std::vector<Tensor> tensors_;
};

// Fails, naming the text, when `name` is empty or holds a character the model spec reserves.
Status validateName(const std::string& name, const char* what);

}  // namespace poseidon::model
