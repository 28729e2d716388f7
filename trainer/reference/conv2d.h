// Conv2d: a stride-1 convolution with "same"-style zero padding, PyTorch's nn.Conv2d with
// stride 1, dilation 1, one group.
//
// x is K x C x H x W, y is K x O x H' x W' (H' = H + 2 pad - kh + 1), the weight O x C x kh x kw
// and the bias O, in one span (weight, bias). y[k][o] = b[o] + sum_c W[o][c] (*) x[k][c], where
// (*) is cross-correlation, as every framework computes it.
//
// The whole batch goes through one im2col and one sgemm for the forward pass, one sgemm for dW
// and one (plus col2im) for dX: few large products are what OpenBLAS runs fast.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/reference/im2col.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference {

struct Conv2dOptions {
  size_t out_channels = 0;
  size_t kernel = 0;  // square kernel, kernel x kernel
  size_t pad = 0;     // zeros on each side; (kernel - 1) / 2 keeps H x W for an odd kernel
};

// The geometry of conv layer `name` (and of its GPU twin): fails, naming the layer and the sizes,
// for a size of 0 or a kernel wider than the padded input.
Result<ConvGeometry> convGeometry(const std::string& name, size_t batch, SampleShape input,
                                  const Conv2dOptions& options);
// The layer as the library sees it (stride 1, one group, with bias).
model::Layer describeConv(const std::string& name, const ConvGeometry& geometry, size_t out_channels);

class Conv2d final : public ParametricLayer {
 public:
  // Fails as convGeometry() does.
  static Result<std::unique_ptr<Conv2d>> create(std::string name, size_t batch, SampleShape input,
                                                Conv2dOptions options);

  const ConvGeometry& geometry() const { return geometry_; }
  std::optional<model::Layer> describe() const override;

  Status forward(std::span<const float> x, std::span<float> y) override;
  // Once per forward: the dX product reuses the forward's columns.
  Status backward(std::span<const float> x, std::span<const float> y, std::span<const float> dy,
                  std::span<float> dx) override;

 private:
  Conv2d(std::string name, const ConvGeometry& geometry, size_t out_channels);

  ConvGeometry geometry_;
  size_t out_channels_;
  // im2col of the last forward's input, kept for dW; backward then reuses it for dX's columns.
  std::vector<float> columns_;
  // out x (K * P): the product before it is spread into NCHW, and dY gathered for the products.
  std::vector<float> by_channel_;
};

}  // namespace poseidon::trainer::reference
