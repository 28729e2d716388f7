// The CPU twins of pack / unpack against the double reference (tests/kernels/float16_reference.h)
// for every packed type and several scales: layer groups of pieces with odd sizes (0, 1, 17, ...),
// gaps, unaligned tensors and an unaligned packed buffer; values over the whole float range plus
// infinities and NaNs. The tolerance is zero: each element is one float multiplication and one
// round-to-nearest-even conversion, which have one right answer. Gaps are left untouched. Then
// the round trip and the argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/convert_element.h"
#include "kernels/pack.h"
#include "tests/kernels/expect_rejected.h"
#include "tests/kernels/float16_reference.h"
#include "tests/kernels/pack_case.h"

namespace poseidon::kernels {
namespace {

using PackParam = std::tuple<PackedType, float>;  // type, scale

std::string paramName(const ::testing::TestParamInfo<PackParam>& test) {
  const float scale = std::get<1>(test.param);
  const char* suffix = scale == 1.0f ? "_scale1" : scale == 0.125f ? "_scale1_8" : "_scale1_3";
  return std::string(packedTypeName(std::get<0>(test.param))) + suffix;
}

class PackReference : public ::testing::TestWithParam<PackParam> {};

TEST_P(PackReference, PackGivesTheReferenceBitsAndLeavesGapsAlone) {
  const auto [type, scale] = GetParam();
  PackCase g(groupSizes(), type, 11u);
  packCpu(g.job(scale));
  std::vector<bool> covered(g.packed_count, false);
  for (size_t k = 0; k < g.pieces.size(); ++k) {
    for (size_t i = 0; i < g.pieces[k].count; ++i) {
      const uint64_t e = g.pieces[k].offset + i;
      covered[e] = true;
      const uint32_t want = referencePack(type, g.tensors[k][i], scale);
      ASSERT_TRUE(sameValueBits(type, g.packedBits(e), want))
          << "piece " << k << " element " << i << " = " << g.tensors[k][i] << ": got 0x" << std::hex << g.packedBits(e)
          << ", want 0x" << want;
    }
  }
  const size_t bytes = packedBytes(type);
  for (uint64_t e = 0; e < g.packed_count; ++e) {
    if (covered[e]) continue;
    for (size_t b = 0; b < bytes; ++b) ASSERT_EQ(g.storage[(e + 1) * bytes + b], kPackSentinel) << "gap element " << e;
  }
  for (size_t b = 0; b < bytes; ++b) ASSERT_EQ(g.storage[b], kPackSentinel) << "byte before the packed buffer";
}

TEST_P(PackReference, UnpackGivesTheReferenceBits) {
  const auto [type, scale] = GetParam();
  PackCase g(groupSizes(), type, 13u);
  std::mt19937 random(5);
  for (unsigned char& byte : g.storage) byte = static_cast<unsigned char>(random());  // every pattern, NaNs too
  unpackCpu(g.job(scale));
  for (size_t k = 0; k < g.pieces.size(); ++k) {
    for (size_t i = 0; i < g.pieces[k].count; ++i) {
      const uint32_t packed = g.packedBits(g.pieces[k].offset + i);
      const uint32_t want = referenceUnpack(type, packed, scale);
      ASSERT_TRUE(sameValueBits(PackedType::kF32, floatBits(g.tensors[k][i]), want))
          << "piece " << k << " element " << i << " from 0x" << std::hex << packed << ": got " << g.tensors[k][i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackReference,
                         ::testing::Combine(::testing::Values(PackedType::kF32, PackedType::kBf16, PackedType::kF16),
                                            ::testing::Values(1.0f, 0.125f, 1.0f / 3.0f)),
                         paramName);

class PackIsas : public ::testing::TestWithParam<PackParam> {};

// The vector paths (and F16C for binary16) give the generic loops' bytes, both ways; sizes past
// the streaming threshold too (a 4 MiB output goes through the L1 block and streaming stores).
TEST_P(PackIsas, EveryVectorPathGivesTheGenericBytes) {
  const auto [type, scale] = GetParam();
  std::vector<size_t> sizes = groupSizes();
  sizes.push_back((size_t{4} << 20) / packedBytes(type) + 5);
  PackCase generic(sizes, type, 31u);
  PackJob job = generic.job(scale);
  job.isa = CpuIsa::kGeneric;
  packCpu(job);
  for (CpuIsa isa : {CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAuto}) {
    if (!cpuHasIsa(isa)) {
      std::cout << "isa " << isaName(isa) << " not on this CPU; not compared\n";
      continue;
    }
    PackCase vector(sizes, type, 31u);
    job = vector.job(scale);
    job.isa = isa;
    packCpu(job);
    EXPECT_EQ(generic.storage, vector.storage) << "pack, isa " << isaName(isa);
    // Unpack the packed bytes back with this isa and with the generic loops.
    for (UnalignedBuffer& t : vector.tensors) std::fill(t.data(), t.data() + t.size(), 0.0f);
    unpackCpu(job);
    job = generic.job(scale);
    job.isa = CpuIsa::kGeneric;
    for (UnalignedBuffer& t : generic.tensors) std::fill(t.data(), t.data() + t.size(), 0.0f);
    unpackCpu(job);
    for (size_t k = 0; k < sizes.size(); ++k) {
      EXPECT_EQ(std::memcmp(generic.tensors[k].data(), vector.tensors[k].data(), sizes[k] * sizeof(float)), 0)
          << "unpack, isa " << isaName(isa) << ", tensor " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackIsas,
                         ::testing::Combine(::testing::Values(PackedType::kF32, PackedType::kBf16, PackedType::kF16),
                                            ::testing::Values(1.0f, 1.0f / 3.0f)),
                         paramName);

TEST(PackRoundTrip, F32AtScaleOneIsExact) {
  PackCase g(groupSizes(), PackedType::kF32, 3u);
  std::vector<std::vector<float>> before;
  for (const UnalignedBuffer& t : g.tensors) before.emplace_back(t.data(), t.data() + t.size());
  packCpu(g.job(1.0f));
  for (UnalignedBuffer& t : g.tensors) std::fill(t.data(), t.data() + t.size(), 0.0f);
  unpackCpu(g.job(1.0f));
  for (size_t k = 0; k < g.tensors.size(); ++k) {
    const size_t bytes = before[k].size() * sizeof(float);
    // An empty tensor has no data pointer, which memcmp must not be given (UBSan).
    if (bytes > 0) {
      ASSERT_EQ(std::memcmp(before[k].data(), g.tensors[k].data(), bytes), 0) << "tensor " << k;
    }
  }
}

TEST(PackArguments, NameTheBadField) {
  PackCase g({4, 5}, PackedType::kBf16, 1u);
  const PackJob good = g.job(1.0f);
  EXPECT_NO_THROW(packCpu(good));
  EXPECT_NO_THROW(unpackCpu(good));

  std::vector<PackPiece> unsorted = g.pieces, too_long = g.pieces, null_tensor = g.pieces;
  unsorted[1].offset = unsorted[0].offset + 2;
  too_long[1].count = g.packed_count;
  null_tensor[0].tensor = nullptr;
  for (auto kernel : {packCpu, unpackCpu}) {
    expectEachRejected(kernel, good,
                       {{[](PackJob& job) { job.type = static_cast<PackedType>(4); }, "type 4"},
                        {[](PackJob& job) { job.packed = nullptr; }, "packed is null but packed_count is"},
                        {[](PackJob& job) { job.isa = static_cast<CpuIsa>(6); }, "isa 6"},
                        {[&](PackJob& job) { job.pieces = unsorted; }, "pieces[1].offset"},
                        {[&](PackJob& job) { job.pieces = too_long; }, "past packed_count"},
                        {[&](PackJob& job) { job.pieces = null_tensor; }, "pieces[0].tensor is null"}});
  }
}

}  // namespace
}  // namespace poseidon::kernels
