// What the GPU twins' tests share: skipping without a device, a context, running any layer (CPU
// or GPU: through its own FloatMemory) on host test data, and comparing results with a tolerance.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/layer.h"
#include "trainer/reference/parametric_layer.h"

namespace poseidon::trainer::reference::testing {

// Skips the test, saying why ("no CUDA device: ..."), where no device exists; else makes the
// context every twin of the test is built on.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override;
  GpuContext& context() { return *context_; }
  const FloatMemory& device() { return context_->memory(); }

 private:
  std::unique_ptr<GpuContext> context_;
};

// A copy of `values` (host floats) in memory `memory`; fails the test if that cannot be had.
FloatBlock uploaded(const FloatMemory& memory, const std::vector<float>& values);
// The floats of `span`, which lives in `memory`, on the host.
std::vector<float> downloaded(const FloatMemory& memory, std::span<const float> span);

// One forward and one backward of `layer` on x and dy (host values), in the layer's memory, and
// what came out, on the host: y, dx (empty unless want_dx) and the parameter gradients (empty for
// a layer without parameters).
struct LayerRun {
  std::vector<float> y;
  std::vector<float> dx;
  std::vector<float> grads;
};
LayerRun runLayer(Layer& layer, const std::vector<float>& x, const std::vector<float>& dy, bool want_dx = true);

// The CPU layer's parameters into its twin's memory, so both start from the same bits.
void copyParameters(const ParametricLayer& from, ParametricLayer& to);

// Success when max_i |got_i - want_i| <= tolerance * max_i |want_i| (a relative error in the max
// norm: how far float sums in another order may drift, relative to the tensor's scale); else the
// worst element, both values and the bound.
::testing::AssertionResult closeInMaxNorm(const std::vector<float>& got, const std::vector<float>& want,
                                          double tolerance, const std::string& name);
// Success when ||got - want||_2 <= tolerance * ||want||_2: robust to a few elements that take
// another branch (a max-pool or ReLU decision flipped by a last-bit difference upstream).
::testing::AssertionResult closeInNorm(const std::vector<float>& got, const std::vector<float>& want, double tolerance,
                                       const std::string& name);

}  // namespace poseidon::trainer::reference::testing
