// The dispatch layer on the CPU: each call runs the CPU twin (same bits as calling it directly);
// bad arguments, an unknown device and CUDA in a build without it come back as messages naming
// the call and the device, never as exceptions. (The CUDA path is covered by the gpu suites.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "kernels/dispatch.h"
#include "tests/kernels/pack_case.h"
#include "tests/kernels/sf_case.h"
#include "tests/kernels/update_case.h"

namespace poseidon::kernels {
namespace {

bool sameFloats(const UnalignedBuffer& a, const UnalignedBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expectError(const Status& status, const std::string& needle) {
  EXPECT_FALSE(status.isOk());
  EXPECT_NE(status.message().find(needle), std::string::npos) << status.message();
}

TEST(Dispatch, CpuRunsTheCpuTwins) {
  UpdateCase direct(ElementRule::kAdam, 1001, 3, 1u), dispatched(ElementRule::kAdam, 1001, 3, 1u);
  chunkUpdateCpu(direct.update(0));
  ASSERT_TRUE(chunkUpdate(dispatched.update(0), Place::cpu()).isOk());
  EXPECT_TRUE(sameFloats(direct.params, dispatched.params));
  EXPECT_TRUE(sameFloats(direct.state1, dispatched.state1));

  const SfShape shape{20, 30, 4, 2};
  SfCase sf_direct(ElementRule::kSgdMomentum, shape, 2u), sf_dispatched(ElementRule::kSgdMomentum, shape, 2u);
  sfUpdateCpu(sf_direct.update(0));
  ASSERT_TRUE(sfUpdate(sf_dispatched.update(0), Place::cpu()).isOk());
  EXPECT_TRUE(sameFloats(sf_direct.weights.params, sf_dispatched.weights.params));
  EXPECT_TRUE(sameFloats(sf_direct.weights.state0, sf_dispatched.weights.state0));

  PackCase pack_direct(groupSizes(), PackedType::kBf16, 3u), pack_dispatched(groupSizes(), PackedType::kBf16, 3u);
  packCpu(pack_direct.job(0.5f));
  ASSERT_TRUE(pack(pack_dispatched.job(0.5f), Place::cpu()).isOk());
  EXPECT_EQ(pack_direct.storage, pack_dispatched.storage);
  unpackCpu(pack_direct.job(2.0f));
  ASSERT_TRUE(unpack(pack_dispatched.job(2.0f), Place::cpu()).isOk());
  for (size_t k = 0; k < pack_direct.tensors.size(); ++k) {
    EXPECT_TRUE(sameFloats(pack_direct.tensors[k], pack_dispatched.tensors[k])) << "tensor " << k;
  }
}

TEST(Dispatch, BadArgumentsNameTheCallAndDevice) {
  UpdateCase c(ElementRule::kSgd, 8, 1, 4u);
  ChunkUpdate update = c.update(0);
  update.params = nullptr;
  expectError(chunkUpdate(update, Place::cpu()), "chunkUpdate on cpu: params is null");
  // Checked before anything reaches CUDA, so this holds in any build, with or without a device.
  expectError(chunkUpdate(update, Place::cuda(nullptr)), "chunkUpdate on cuda: params is null");

  SfCase sf(ElementRule::kSgd, {3, 3, 1, 2}, 5u);
  SfUpdate sf_update = sf.update(0);
  sf_update.v = sf_update.v.first(1);
  expectError(sfUpdate(sf_update, Place::cuda(nullptr)), "sfUpdate on cuda: u has 2 factors but v has 1");

  PackCase p({4}, PackedType::kF16, 6u);
  PackJob job = p.job(1.0f);
  job.type = static_cast<PackedType>(0);
  expectError(pack(job, Place::cpu()), "pack on cpu: type 0");
  expectError(unpack(job, Place::cuda(nullptr)), "unpack on cuda: type 0");
}

TEST(Dispatch, UnknownDeviceIsAnError) {
  UpdateCase c(ElementRule::kSgd, 8, 1, 7u);
  expectError(chunkUpdate(c.update(0), Place{static_cast<Device>(7), nullptr}), "chunkUpdate: device 7");
}

TEST(Dispatch, CudaInABuildWithoutItSaysSo) {
  if (kernelsHaveCuda()) GTEST_SKIP() << "this build has CUDA; the gpu suites run the CUDA path";
  UpdateCase c(ElementRule::kSgd, 8, 1, 8u);
  expectError(chunkUpdate(c.update(0), Place::cuda(nullptr)), "chunkUpdate on cuda: this build has no CUDA");
}

}  // namespace
}  // namespace poseidon::kernels
