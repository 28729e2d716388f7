// The CUDA SF update against the CPU twin's exact method: the same bits for every optimizer and
// the shapes of the CPU suite (sizes off the 128 x 128 tiles, rank 0, a depth of 1024), over two
// steps, launched through the dispatch layer. Skips, saying why, where no device exists; the
// argument checks need none.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/sf_update_cuda.h"
#include "kernels/dispatch.h"
#include "tests/kernels/cuda_support.h"
#include "tests/kernels/sf_case.h"

namespace poseidon::kernels {
namespace {

DeviceBuffer toDevice(const UnalignedBuffer& host) { return DeviceBuffer(host.data(), host.size() * sizeof(float)); }

using ShapeParam = std::tuple<ElementRule, SfShape>;

class SfUpdateGpu : public ::testing::TestWithParam<ShapeParam> {};

TEST_P(SfUpdateGpu, MatchesTheCpuTwinBitForBit) {
  if (const std::string why = whyNoDevice(); !why.empty()) GTEST_SKIP() << why;
  const auto [rule, shape] = GetParam();
  SfCase c(rule, shape, 41u);
  DeviceBuffer params = toDevice(c.weights.params), state0 = toDevice(c.weights.state0),
               state1 = toDevice(c.weights.state1);
  ASSERT_TRUE(params && state0 && state1);
  for (uint64_t t = 0; t < 2; ++t) {
    if (t > 0) c.newFactors();
    std::vector<DeviceBuffer> factors;
    std::vector<const float*> u, v;
    for (size_t p = 0; p < shape.peers; ++p) {
      factors.push_back(toDevice(c.u[p]));
      u.push_back(factors.back().floats());
      factors.push_back(toDevice(c.v[p]));
      v.push_back(factors.back().floats());
      ASSERT_TRUE(factors[factors.size() - 2] && factors.back());
    }
    SfUpdate on_device = c.update(t);
    on_device.params = params.floats();
    on_device.state0 = state0.floats();
    on_device.state1 = state1.floats();
    on_device.u = u;
    on_device.v = v;
    const Status status = sfUpdate(on_device, Place::cuda(nullptr));
    ASSERT_TRUE(status.isOk()) << status.message();
    ASSERT_CUDA(cudaDeviceSynchronize());
    sfUpdateCpu(c.update(t));
    const size_t bytes = c.weights.count * sizeof(float);
    EXPECT_TRUE(sameBits(params.get(), c.weights.params.data(), bytes, "params")) << "step " << t;
    EXPECT_TRUE(sameBits(state0.get(), c.weights.state0.data(), bytes, "state0")) << "step " << t;
    EXPECT_TRUE(sameBits(state1.get(), c.weights.state1.data(), bytes, "state1")) << "step " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SfUpdateGpu,
                         ::testing::Combine(::testing::ValuesIn(kAllRules), ::testing::ValuesIn(testShapes())),
                         [](const ::testing::TestParamInfo<ShapeParam>& test) {
                           return ruleName(std::get<0>(test.param)) + "_" + shapeName(std::get<1>(test.param));
                         });

// Argument checks happen before the device is touched, so these run on any machine.
TEST(SfUpdateGpuArguments, RejectedBeforeTheDevice) {
  SfCase c(ElementRule::kAdam, {4, 4, 2, 2}, 3u);
  SfUpdate u = c.update(0);
  u.v = u.v.first(1);
  EXPECT_EQ(sfUpdateCuda(u, nullptr), cudaErrorInvalidValue);
  std::vector<const float*> many(kMaxCudaFactors + 1, c.u_pointers[0]);
  u = c.update(0);
  u.u = many;
  u.v = many;
  EXPECT_EQ(sfUpdateCuda(u, nullptr), cudaErrorInvalidValue);
  const Status status = sfUpdate(u, Place::cuda(nullptr));
  EXPECT_NE(status.message().find("129 peers' factors exceed the CUDA kernel's 128"), std::string::npos)
      << status.message();
  u = c.update(0);
  u.rows = 0;
  EXPECT_EQ(sfUpdateCuda(u, nullptr), cudaSuccess);  // nothing to do, nothing launched
}

}  // namespace
}  // namespace poseidon::kernels
