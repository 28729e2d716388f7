// Owning wrappers of the cuDNN descriptors a convolution needs: created and set in one call that
// returns a Status, destroyed with the object.
#pragma once

#include <cudnn.h>

#include <memory>

#include "common/status.h"
#include "trainer/reference/im2col.h"

namespace poseidon::trainer::reference {

// The four descriptors of a stride-1, one-group, zero-padded float NCHW cross-correlation with
// bias, and the math mode (FMA, no TF32) on the convolution.
class ConvDescriptors {
 public:
  static Result<std::unique_ptr<ConvDescriptors>> create(const ConvGeometry& geometry, size_t out_channels);
  ~ConvDescriptors();
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t input() const { return input_; }    // K x C x H x W
  cudnnTensorDescriptor_t output() const { return output_; }  // K x O x H' x W'
  cudnnTensorDescriptor_t bias() const { return bias_; }      // 1 x O x 1 x 1
  cudnnFilterDescriptor_t filter() const { return filter_; }  // O x C x kh x kw
  cudnnConvolutionDescriptor_t convolution() const { return convolution_; }

 private:
  ConvDescriptors() = default;

  cudnnTensorDescriptor_t input_ = nullptr;
  cudnnTensorDescriptor_t output_ = nullptr;
  cudnnTensorDescriptor_t bias_ = nullptr;
  cudnnFilterDescriptor_t filter_ = nullptr;
  cudnnConvolutionDescriptor_t convolution_ = nullptr;
};

}  // namespace poseidon::trainer::reference
