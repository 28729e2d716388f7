// The start-up agreement's items: what a model contributes and how a difference is named.
#include <gtest/gtest.h>

#include "model/fingerprint.h"
#include "model/zoo.h"

namespace poseidon::model {
namespace {

Model threeLayers(uint64_t fc3_rows) {
  return Model("m",
               {Layer::other("bn", 8, 8), Layer::fullyConnected("fc2", 4, 8, true),
                Layer::fullyConnected("fc3", fc3_rows, 10, false)},
               32);
}

TEST(Fingerprint, ModelItemsInModelOrder) {
  const Fingerprint fingerprint = modelFingerprint(threeLayers(16));
  const std::vector<FingerprintItem> expected = {
      {"model.batch", "32"},
      {"bn.weight", "8 floats"},
      {"bn.bias", "8 floats"},
      {"layer bn", "other:bn=8+8"},
      {"fc2.weight", "32 floats"},
      {"fc2.bias", "4 floats"},
      {"layer fc2", "fc:fc2=4x8+bias"},
      {"fc3.weight", "160 floats"},
      {"layer fc3", "fc:fc3=16x10"},
  };
  EXPECT_EQ(fingerprint.items(), expected);
  EXPECT_EQ(modelFingerprint(resnet50()).items().size(), 1 + resnet50().layers().size() + resnet50().tensors().size());
}

TEST(Fingerprint, FirstDifferenceInWords) {
  const Fingerprint rank0 = modelFingerprint(threeLayers(16));
  EXPECT_EQ(firstDifference(rank0, "rank 0", rank0, "rank 1"), std::nullopt);
  // Same items, another value: the tensor's size is the first to differ.
  EXPECT_EQ(firstDifference(rank0, "rank 0", modelFingerprint(threeLayers(17)), "rank 1"),
            "rank 1 has fc3.weight = 170 floats, rank 0 has 160 floats");
  // The same sizes in another kind of layer: the layer's item tells them apart.
  const Model other_kind(
      "m",
      {Layer::other("bn", 8, 8), Layer::fullyConnected("fc2", 4, 8, true), Layer::fullyConnected("fc3", 10, 16, false)},
      32);
  EXPECT_EQ(firstDifference(rank0, "rank 0", modelFingerprint(other_kind), "rank 1"),
            "rank 1 has layer fc3 = fc:fc3=10x16, rank 0 has fc:fc3=16x10");
  // A tensor's count alone, as another module's list could have it.
  Fingerprint a, b;
  a.add("fc3.weight", "160 floats");
  b.add("fc3.weight", "170 floats");
  EXPECT_EQ(firstDifference(a, "rank 0", b, "rank 1"), "rank 1 has fc3.weight = 170 floats, rank 0 has 160 floats");
  // Other items at one place.
  Fingerprint c;
  c.add("fc4.weight", "10 floats");
  EXPECT_EQ(firstDifference(a, "rank 0", c, "rank 1"),
            "item 0: rank 1 has fc4.weight = 10 floats, rank 0 has fc3.weight = 160 floats");
  // One list longer, either way; other modules' items appended after the model's.
  Fingerprint longer = a;
  longer.add("ps.servers", "2");
  EXPECT_EQ(firstDifference(a, "rank 0", longer, "rank 2"), "rank 2 has ps.servers = 2, rank 0 ends after 1 items");
  EXPECT_EQ(firstDifference(longer, "rank 0", a, "rank 2"), "rank 2 ends after 1 items, rank 0 has ps.servers = 2");
  // The batch K is agreed on too: SFB's factors are K wide.
  EXPECT_EQ(firstDifference(rank0, "rank 0", modelFingerprint(threeLayers(16).withBatch(64)), "rank 3"),
            "rank 3 has model.batch = 64, rank 0 has 32");
}

TEST(Fingerprint, EncodeDecodeRoundTripAndErrors) {
  Fingerprint fingerprint = modelFingerprint(googlenet(true));
  fingerprint.add("odd: name", "value with ; , = and 12:34");
  fingerprint.add("", "");
  auto decoded = Fingerprint::decode(fingerprint.encode());
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  EXPECT_EQ(*decoded, fingerprint);
  EXPECT_TRUE(Fingerprint::decode("").isOk());
  const std::pair<const char*, const char*> bad[] = {
      {"3:abc", "fingerprint of 5 bytes: item 'abc' has no value"},
      {"3:abc9:x", "fingerprint of 8 bytes: at offset 5, expected <length>:<text> within the data"},
      {"x:a1:b", "fingerprint of 6 bytes: at offset 0, expected <length>:<text> within the data"},
      {"3abc", "fingerprint of 4 bytes: at offset 0, expected <length>:<text> within the data"},
  };
  for (const auto& [text, expected] : bad) {
    auto result = Fingerprint::decode(text);
    ASSERT_FALSE(result.isOk()) << text;
    EXPECT_EQ(result.status().message(), expected);
  }
}

}  // namespace
}  // namespace poseidon::model
