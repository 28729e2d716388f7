// SoftmaxCrossEntropyCuda: the GPU twin of SoftmaxCrossEntropy. The logits and dlogits are in
// device memory; labels come from the host (checked there, as on the CPU), and forward copies the
// K per-sample losses and hits back, waiting for the stream, then sums them on the host in
// sample order as the CPU does: the loss differs from the CPU's only by the device's double
// exp / log.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/reference/classifier_loss.h"
#include "trainer/reference/cuda/gpu_context.h"

namespace poseidon::trainer::reference {

class SoftmaxCrossEntropyCuda final : public ClassifierLoss {
 public:
  // Fails when the device memory cannot be had. The context must outlive the loss.
  static Result<std::unique_ptr<SoftmaxCrossEntropyCuda>> create(GpuContext& context, size_t batch, size_t classes);

  size_t batch() const override { return batch_; }
  size_t classes() const override { return classes_; }
  Result<LossResult> forward(std::span<const float> logits, std::span<const int32_t> labels) override;
  Status backward(std::span<float> dlogits) const override;

 private:
  SoftmaxCrossEntropyCuda(GpuContext& context, size_t batch, size_t classes);

  GpuContext& context_;
  size_t batch_;
  size_t classes_;
  FloatBlock probabilities_;
  DeviceBytes labels_;   // int32 x K
  DeviceBytes loss_;     // double x K
  DeviceBytes correct_;  // int32 x K
  std::vector<double> host_loss_;
  std::vector<int32_t> host_correct_;
  bool have_forward_ = false;
};

}  // namespace poseidon::trainer::reference
