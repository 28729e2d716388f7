// The CUDA kernel against the CPU twin: the same bits for every optimizer and gradient count up
// to the launch limit. Skips, saying why, where no device exists; the argument checks need none.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "kernels/chunk_update.h"
#include "kernels/cuda/chunk_update_cuda.h"
#include "tests/kernels/cuda_support.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {
namespace {

void expectSameBits(const DeviceBuffer& device, const UnalignedBuffer& host, const char* name, uint64_t t) {
  EXPECT_TRUE(sameBits(device.get(), host.data(), host.size() * sizeof(float), name)) << "step " << t;
}

DeviceBuffer toDevice(const UnalignedBuffer& host) { return DeviceBuffer(host.data(), host.size() * sizeof(float)); }

using GpuParam = std::tuple<ElementRule, int>;  // rule, gradients

class ChunkUpdateGpu : public ::testing::TestWithParam<GpuParam> {};

TEST_P(ChunkUpdateGpu, MatchesTheCpuTwinBitForBit) {
  if (const std::string why = whyNoDevice(); !why.empty()) GTEST_SKIP() << why;
  const auto [rule, n] = GetParam();
  constexpr size_t kCount = 1000003;
  UpdateCase c(rule, kCount, n, 7u);
  DeviceBuffer params = toDevice(c.params), state0 = toDevice(c.state0), state1 = toDevice(c.state1);
  ASSERT_TRUE(params && state0 && state1);
  for (uint64_t t = 0; t < 3; ++t) {
    if (t > 0) c.newGradients();
    std::vector<DeviceBuffer> gradients;
    std::vector<const float*> pointers;
    for (const UnalignedBuffer& g : c.gradients) {
      gradients.push_back(toDevice(g));
      ASSERT_TRUE(gradients.back());
      pointers.push_back(gradients.back().floats());
    }
    ChunkUpdate on_device = c.update(t);
    on_device.params = params.floats();
    on_device.state0 = state0.floats();
    on_device.state1 = state1.floats();
    on_device.gradients = pointers;
    ASSERT_CUDA(chunkUpdateCuda(on_device, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    chunkUpdateCpu(c.update(t));
    expectSameBits(params, c.params, "params", t);
    expectSameBits(state0, c.state0, "state0", t);
    expectSameBits(state1, c.state1, "state1", t);
  }
}

INSTANTIATE_TEST_SUITE_P(AllOptimizers, ChunkUpdateGpu,
                         ::testing::Combine(::testing::ValuesIn(kAllRules),
                                            ::testing::Values(1, 2, 5, static_cast<int>(kMaxCudaGradients))),
                         [](const ::testing::TestParamInfo<GpuParam>& test) {
                           return caseName(std::get<0>(test.param), std::get<1>(test.param));
                         });

// Argument checks happen before the device is touched, so these run on any machine.
TEST(ChunkUpdateGpuArguments, RejectsWhatTheCpuTwinRejectsAndTooManyGradients) {
  UpdateCase c(ElementRule::kAdam, 4, static_cast<int>(kMaxCudaGradients) + 1, 3u);
  EXPECT_EQ(chunkUpdateCuda(c.update(0), nullptr), cudaErrorInvalidValue);
  ChunkUpdate u = c.update(0);
  u.gradients = u.gradients.first(kMaxCudaGradients);
  u.state1 = nullptr;
  EXPECT_EQ(chunkUpdateCuda(u, nullptr), cudaErrorInvalidValue);
  u.state1 = c.state1.data();
  u.count = 0;
  EXPECT_EQ(chunkUpdateCuda(u, nullptr), cudaSuccess);  // nothing to do, nothing launched
}

}  // namespace
}  // namespace poseidon::kernels
