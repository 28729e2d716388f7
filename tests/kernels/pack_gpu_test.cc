// The CUDA pack / unpack against the CPU twins: the same bytes for every packed type and scale,
// gaps untouched. Skips, saying why, where no device exists; the argument checks need none.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/pack_cuda.h"
#include "tests/kernels/cuda_support.h"
#include "tests/kernels/pack_case.h"

namespace poseidon::kernels {
namespace {

// The case's tensors and packed buffer on the device, and the piece table pointing at them.
struct DeviceGroup {
  explicit DeviceGroup(PackCase& c) : packed(c.storage) {
    std::vector<PackPiece> table = c.pieces;
    for (size_t k = 0; k < c.tensors.size(); ++k) {
      tensors.emplace_back(c.tensors[k].data(), c.tensors[k].size() * sizeof(float));
      table[k].tensor = tensors.back().floats();
    }
    pieces = DeviceBuffer(table);
    count = table.size();
  }
  bool ok() const {
    for (const DeviceBuffer& t : tensors) {
      if (!t) return false;
    }
    return packed && pieces;
  }
  PackJob job(const PackCase& c, float scale) const {
    return {{static_cast<const PackPiece*>(pieces.get()), count},
            static_cast<unsigned char*>(packed.get()) + packedBytes(c.type),
            c.packed_count,
            c.type,
            scale};
  }

  std::vector<DeviceBuffer> tensors;
  DeviceBuffer packed, pieces;
  size_t count = 0;
};

using PackParam = std::tuple<PackedType, float>;

class PackGpu : public ::testing::TestWithParam<PackParam> {};

TEST_P(PackGpu, PackAndUnpackMatchTheCpuTwinsByteForByte) {
  if (const std::string why = whyNoDevice(); !why.empty()) GTEST_SKIP() << why;
  const auto [type, scale] = GetParam();
  PackCase c(groupSizes(), type, 21u);
  DeviceGroup d(c);
  ASSERT_TRUE(d.ok());
  ASSERT_CUDA(packCuda(d.job(c, scale), nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  packCpu(c.job(scale));
  EXPECT_TRUE(sameBits(d.packed.get(), c.storage.data(), c.storage.size(), "packed"));

  // Unpack what was packed back into the (device and host) tensors.
  ASSERT_CUDA(unpackCuda(d.job(c, scale), nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  unpackCpu(c.job(scale));
  for (size_t k = 0; k < c.tensors.size(); ++k) {
    EXPECT_TRUE(sameBits(d.tensors[k].get(), c.tensors[k].data(), c.tensors[k].size() * sizeof(float),
                         "tensor " + std::to_string(k)));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackGpu,
                         ::testing::Combine(::testing::Values(PackedType::kF32, PackedType::kBf16, PackedType::kF16),
                                            ::testing::Values(1.0f, 1.0f / 3.0f)),
                         [](const ::testing::TestParamInfo<PackParam>& test) {
                           return std::string(packedTypeName(std::get<0>(test.param))) +
                                  (std::get<1>(test.param) == 1.0f ? "_scale1" : "_scale1_3");
                         });

// Argument checks happen before the device is touched, so these run on any machine.
TEST(PackGpuArguments, RejectedBeforeTheDevice) {
  PackCase c({3}, PackedType::kF16, 1u);
  PackJob job = c.job(1.0f);
  job.type = static_cast<PackedType>(9);
  EXPECT_EQ(packCuda(job, nullptr), cudaErrorInvalidValue);
  job = c.job(1.0f);
  job.packed = nullptr;
  EXPECT_EQ(unpackCuda(job, nullptr), cudaErrorInvalidValue);
  job = c.job(1.0f);
  job.packed_count = 0;
  EXPECT_EQ(packCuda(job, nullptr), cudaSuccess);  // nothing to do, nothing launched
}

}  // namespace
}  // namespace poseidon::kernels
