// The small pure pieces of the PS: immediates and their widening, consistency and model specs
// as command lines give them (errors name the bad part).
#include <gtest/gtest.h>

#include "model/spec.h"
#include "ps/chunk_layout.h"
#include "ps/consistency.h"
#include "ps/imm_code.h"

namespace poseidon::ps {
namespace {

TEST(ImmCode, RoundTripsEveryField) {
  for (uint8_t type : {0, 3, 7}) {
    for (uint32_t chunk : {0u, 1u, kMaxChunksPerServer - 1}) {
      for (uint64_t value : {uint64_t{0}, uint64_t{12345}, uint64_t{kImmValueMask}}) {
        const Imm imm = decodeImm(encodeImm(type, chunk, value));
        EXPECT_EQ(imm.type, type);
        EXPECT_EQ(imm.chunk, chunk);
        EXPECT_EQ(imm.value, value);
      }
    }
  }
}

TEST(ImmCode, WideningRecoversValuesWithinTheWindow) {
  for (uint64_t truth : {uint64_t{0}, uint64_t{5}, kImmValueWindow - 1, kImmValueWindow, 3 * kImmValueWindow + 17}) {
    const auto low = static_cast<uint32_t>(truth & kImmValueMask);
    for (uint64_t slack : {uint64_t{0}, uint64_t{1}, kImmValueWindow - 1}) {
      EXPECT_EQ(widenAtMost(truth + slack, low), truth) << truth << " + " << slack;
      if (truth >= slack) {
        EXPECT_EQ(widenAtLeast(truth - slack, low), truth) << truth << " - " << slack;
      }
    }
  }
}

TEST(ConsistencyParse, AcceptsEachModeAndNamesWhatIsWrong) {
  EXPECT_EQ(parseConsistency("bsp")->canonical(), "bsp");
  EXPECT_EQ(parseConsistency("ssp:3")->staleness, 3u);
  EXPECT_EQ(parseConsistency("async")->canonical(), "async:push=1,fetch=1");
  EXPECT_EQ(parseConsistency("async:push=4,fetch=2")->canonical(), "async:push=4,fetch=2");
  EXPECT_EQ(parseConsistency("async:fetch=3")->canonical(), "async:push=1,fetch=3");
  EXPECT_EQ(parseConsistency("async:")->canonical(), "async:push=1,fetch=1");
  EXPECT_EQ(Consistency::ssp(3).minVersion(10), 7u);
  EXPECT_EQ(Consistency::ssp(3).minVersion(2), 0u);
  EXPECT_EQ(Consistency::bsp().minVersion(10), 10u);
  EXPECT_EQ(Consistency::async().minVersion(10), 0u);
  EXPECT_NE(parseConsistency("ssp:x").status().message().find("'x'"), std::string::npos);
  EXPECT_NE(parseConsistency("ssp:99999").status().message().find("staleness 99999"), std::string::npos);
  EXPECT_NE(parseConsistency("async:push=0").status().message().find("n_push 0"), std::string::npos);
  EXPECT_NE(parseConsistency("async:pull=2").status().message().find("'pull=2'"), std::string::npos);
  EXPECT_NE(parseConsistency("async:push=2,").status().message().find("option ''"), std::string::npos);
  EXPECT_NE(parseConsistency("async:,push=2").status().message().find("option ''"), std::string::npos);
  EXPECT_NE(parseConsistency("async:push=2,,fetch=1").status().message().find("option ''"), std::string::npos);
  EXPECT_NE(parseConsistency("bsp:1").status().message().find("'bsp:1'"), std::string::npos);
  EXPECT_NE(parseConsistency("hogwild").status().message().find("'hogwild'"), std::string::npos);
}

// The --model words the PS tools have always taken give the tensors they always gave (same
// names, same counts, so the same chunk layout and checkpoint hash); the language itself is
// tested in tests/model/spec_test.cc.
TEST(ModelSpecForThePs, TheCommandLinesThatWorkedStillGiveTheSameTensors) {
  const auto tensors = [](std::string_view spec) {
    auto model = model::parseModelSpec(spec);
    EXPECT_TRUE(model.isOk()) << model.status().toString();
    return model ? model->tensors() : std::vector<model::Tensor>{};
  };
  const auto vgg19 = tensors("vgg19");
  ASSERT_EQ(vgg19.size(), 38u);  // 19 weight layers, weight and bias each
  EXPECT_EQ(vgg19.front().name, "conv1.weight");
  EXPECT_EQ(vgg19.back().name, "fc8.bias");
  EXPECT_EQ(modelFingerprint(vgg19), 0xf618dc2616100592ull);
  EXPECT_EQ(tensors("vgg19-22k").back().floats, 21841u);
  const auto uniform = tensors("uniform:25x1048576");
  ASSERT_EQ(uniform.size(), 25u);
  EXPECT_EQ(uniform.front().name, "t0");
  EXPECT_EQ(uniform.front().floats, 1048576u);
  EXPECT_EQ(modelFingerprint(uniform), 0xb78f54ed6deead57ull);
  const auto list = tensors("tensors:a=3,b=4");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1].name, "b");
  EXPECT_EQ(list[1].floats, 4u);
  EXPECT_EQ(modelFingerprint(list), 0x14132751ce8489ull);
  // Errors still name the spec and the part.
  EXPECT_NE(model::parseModelSpec("uniform:25").status().message().find("'uniform:25'"), std::string::npos);
  EXPECT_NE(model::parseModelSpec("uniform:0x5").status().message().find("'0'"), std::string::npos);
  EXPECT_NE(model::parseModelSpec("tensors:a=1,b").status().message().find("'b'"), std::string::npos);
  EXPECT_NE(model::parseModelSpec("tensors:a=-1").status().message().find("'-1'"), std::string::npos);
  EXPECT_NE(model::parseModelSpec("resnet5").status().message().find("'resnet5'"), std::string::npos);
}

}  // namespace
}  // namespace poseidon::ps
