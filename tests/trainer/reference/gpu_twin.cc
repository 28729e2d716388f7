#include "tests/trainer/reference/gpu_twin.h"

#include <algorithm>
#include <cmath>

#include "tests/kernels/cuda_support.h"

namespace poseidon::trainer::reference::testing {

void GpuTest::SetUp() {
  if (const std::string why = kernels::whyNoDevice(); !why.empty()) GTEST_SKIP() << why;
  Result<std::unique_ptr<GpuContext>> context = GpuContext::create();
  ASSERT_TRUE(context.isOk()) << context.status().toString();
  context_ = std::move(context).value();
}

FloatBlock uploaded(const FloatMemory& memory, const std::vector<float>& values) {
  Result<FloatBlock> block = memory.allocate(values.size());
  EXPECT_TRUE(block.isOk()) << block.status().toString();
  if (!block.isOk()) return {};
  const Status status = memory.upload(values, block->span());
  EXPECT_TRUE(status.isOk()) << status.toString();
  return std::move(block).value();
}

std::vector<float> downloaded(const FloatMemory& memory, std::span<const float> span) {
  std::vector<float> host(span.size());
  const Status status = memory.download(span, host);
  EXPECT_TRUE(status.isOk()) << status.toString();
  return host;
}

LayerRun runLayer(Layer& layer, const std::vector<float>& x, const std::vector<float>& dy, bool want_dx) {
  const FloatMemory& memory = layer.memory();
  const FloatBlock x_block = uploaded(memory, x);
  const FloatBlock dy_block = uploaded(memory, dy);
  const FloatBlock y_block = uploaded(memory, std::vector<float>(layer.outputSize()));
  const FloatBlock dx_block = uploaded(memory, std::vector<float>(want_dx ? layer.inputSize() : 0));
  const Status forward = layer.forward(x_block.span(), y_block.span());
  EXPECT_TRUE(forward.isOk()) << forward.toString();
  const Status backward = layer.backward(x_block.span(), y_block.span(), dy_block.span(), dx_block.span());
  EXPECT_TRUE(backward.isOk()) << backward.toString();
  LayerRun run{.y = downloaded(memory, y_block.span()), .dx = downloaded(memory, dx_block.span()), .grads = {}};
  if (auto* parametric = dynamic_cast<ParametricLayer*>(&layer)) run.grads = downloaded(memory, parametric->grads());
  return run;
}

void copyParameters(const ParametricLayer& from, ParametricLayer& to) {
  ASSERT_TRUE(from.memory().place().device == kernels::Device::kCpu);
  const Status status = to.memory().upload(from.params(), to.params());
  ASSERT_TRUE(status.isOk()) << status.toString();
}

::testing::AssertionResult closeInMaxNorm(const std::vector<float>& got, const std::vector<float>& want,
                                          double tolerance, const std::string& name) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << name << ": " << got.size() << " values, expected " << want.size();
  }
  double scale = 0.0;
  for (const float w : want) scale = std::max(scale, std::fabs(static_cast<double>(w)));
  size_t worst = 0;
  double worst_error = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    if (!(error <= worst_error)) {  // NaN counts as the worst
      worst = i;
      worst_error = error;
    }
  }
  if (worst_error <= tolerance * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << ": element " << worst << " is " << got[worst] << ", expected "
                                       << want[worst] << " (error " << worst_error << " > " << tolerance
                                       << " x max |expected| " << scale << ")";
}

::testing::AssertionResult closeInNorm(const std::vector<float>& got, const std::vector<float>& want, double tolerance,
                                       const std::string& name) {
  if (got.size() != want.size()) {
    return ::testing::AssertionFailure() << name << ": " << got.size() << " values, expected " << want.size();
  }
  double error = 0.0;
  double norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
    error += d * d;
    norm += static_cast<double>(want[i]) * static_cast<double>(want[i]);
  }
  if (std::sqrt(error) <= tolerance * std::sqrt(norm)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << ": ||got - expected|| = " << std::sqrt(error) << " > " << tolerance
                                       << " x ||expected|| = " << tolerance * std::sqrt(norm);
}

}  // namespace poseidon::trainer::reference::testing
