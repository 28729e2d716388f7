// RegionExchange: ranks publish descriptors with a fingerprint and fetch each other's; every bad
// value (malformed, short, other fingerprint, too small a region, missing) fails naming the
// member and the key.
#include "transport/bootstrap/region_exchange.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/support/memory_store.h"

namespace poseidon::transport::bootstrap {
namespace {

using namespace std::chrono_literals;
using poseidon::testing::MemoryStore;

constexpr uint32_t kFingerprint = 0xC0FFEE11;

RemoteDescriptor descriptor(uint32_t key, uint64_t length) {
  RemoteDescriptor d;
  d.key = key;
  d.address = 0x1000 * key;
  d.length = length;
  return d;
}

RegionExchange exchange(Store& store) {
  return RegionExchange(StoreView(store, "job").child("sfb"), {"SFB receive buffer", "rank", "SFB layers"});
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

TEST(RegionExchange, PublishedDescriptorsAndExtraRoundTrip) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor mine[] = {descriptor(1, 100), descriptor(2, 200)};
  const uint8_t extra[] = {7, 8, 9};
  ASSERT_TRUE(ranks.publish(3, kFingerprint, mine, extra).isOk());
  EXPECT_EQ(store.keys(), std::vector<std::string>{"job/sfb/3"});
  EXPECT_EQ(ranks.key(3), "job/sfb/3");

  auto got = ranks.fetch(3, {kFingerprint, {100, 150}}, Deadline::after(1s));
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  ASSERT_EQ(got->descriptors.size(), 2u);
  EXPECT_EQ(got->descriptors[0].key, 1u);
  EXPECT_EQ(got->descriptors[1].length, 200u);
  EXPECT_EQ(got->descriptors[1].address, 0x2000u);
  EXPECT_EQ(got->extra, (std::vector<uint8_t>{7, 8, 9}));
}

TEST(RegionExchange, FetchAllWaitsForEveryNamedMember) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  std::thread late([&] {
    std::this_thread::sleep_for(20ms);
    for (int r : {0, 2}) {
      const RemoteDescriptor one[] = {descriptor(static_cast<uint32_t>(10 + r), 64)};
      EXPECT_TRUE(exchange(store).publish(r, kFingerprint, one).isOk());
    }
  });
  const int members[] = {0, 2};
  auto all = ranks.fetchAll(
      members,
      [](int) {
        return RegionNeeds{kFingerprint, {64}};
      },
      Deadline::after(5s));
  late.join();
  ASSERT_TRUE(all.isOk()) << all.status().toString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].descriptors[0].key, 10u);
  EXPECT_EQ((*all)[1].descriptors[0].key, 12u);
}

TEST(RegionExchange, AMissingValueTimesOutNamingTheMemberAndTheKey) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const int members[] = {1};
  auto all = ranks.fetchAll(
      members,
      [](int) {
        return RegionNeeds{kFingerprint, {8}};
      },
      Deadline::after(20ms));
  ASSERT_FALSE(all.isOk());
  EXPECT_EQ(all.status().code(), StatusCode::kTimeout);
  EXPECT_TRUE(contains(all.status(), "SFB receive buffer of rank 1")) << all.status().toString();
  EXPECT_TRUE(contains(all.status(), "job/sfb/1")) << all.status().toString();
}

TEST(RegionExchange, AnotherFingerprintIsRefusedNamingBoth) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor one[] = {descriptor(1, 64)};
  ASSERT_TRUE(ranks.publish(2, 0x1234, one).isOk());
  auto got = ranks.fetch(2, {kFingerprint, {64}}, Deadline::after(1s));
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(got.status(), "rank 2 was given other SFB layers")) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "0x00001234")) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "0xc0ffee11")) << got.status().toString();
}

// A caller whose extra bytes describe what the fingerprint covers names the difference; its
// explanation is given the member's extra bytes, keeps its code, and an OK one leaves the generic
// message.
TEST(RegionExchange, AnotherFingerprintIsExplainedFromTheExtraBytesWhenTheCallerCan) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor one[] = {descriptor(1, 64)};
  const uint8_t extra[] = {'f', 'c', '7'};
  ASSERT_TRUE(ranks.publish(2, 0x1234, one, extra).isOk());
  RegionNeeds needs{kFingerprint, {64}};
  std::vector<uint8_t> seen;
  needs.explain_mismatch = [&](std::span<const uint8_t> theirs) {
    seen.assign(theirs.begin(), theirs.end());
    return makeStatus(StatusCode::kInvalidArgument, "it has layer fc7, we have fc6");
  };
  auto got = ranks.fetch(2, needs, Deadline::after(1s));
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(seen, (std::vector<uint8_t>{'f', 'c', '7'}));
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(got.status(), "rank 2 was given other SFB layers than this side: it has layer fc7, we have fc6"))
      << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "job/sfb/2")) << got.status().toString();

  needs.explain_mismatch = [](std::span<const uint8_t>) {
    return makeStatus(StatusCode::kProtocolError, "its layer list is cut");
  };
  got = ranks.fetch(2, needs, Deadline::after(1s));
  EXPECT_EQ(got.status().code(), StatusCode::kProtocolError) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "its layer list is cut")) << got.status().toString();

  needs.explain_mismatch = [](std::span<const uint8_t>) { return Status::ok(); };
  got = ranks.fetch(2, needs, Deadline::after(1s));
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "0x00001234")) << got.status().toString();
}

TEST(RegionExchange, TooSmallARegionIsRefusedNamingItsLengthAndTheNeed) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor two[] = {descriptor(1, 64), descriptor(2, 31)};
  ASSERT_TRUE(ranks.publish(4, kFingerprint, two).isOk());
  auto got = ranks.fetch(4, {kFingerprint, {64, 32}}, Deadline::after(1s));
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), StatusCode::kProtocolError);
  EXPECT_TRUE(contains(got.status(), "region 1 is 31 bytes; this side needs at least 32")) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "rank 4")) << got.status().toString();
  EXPECT_TRUE(contains(got.status(), "job/sfb/4")) << got.status().toString();
}

TEST(RegionExchange, ADifferentDescriptorCountIsRefused) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor one[] = {descriptor(1, 64)};
  ASSERT_TRUE(ranks.publish(0, kFingerprint, one).isOk());
  auto got = ranks.fetch(0, {kFingerprint, {64, 64}}, Deadline::after(1s));
  ASSERT_FALSE(got.isOk());
  EXPECT_EQ(got.status().code(), StatusCode::kProtocolError);
  EXPECT_TRUE(contains(got.status(), "holds 1 descriptors, expected 2")) << got.status().toString();
}

// Values a broken or foreign publisher could leave: each is refused by the parser, naming the
// member and the key, never read past its end.
TEST(RegionExchange, MalformedAndShortValuesAreRefused) {
  MemoryStore store;
  RegionExchange ranks = exchange(store);
  const RemoteDescriptor one[] = {descriptor(1, 64)};
  const std::vector<uint8_t> good = encodeRegions(kFingerprint, one);
  const RegionNeeds needs{kFingerprint, {64}};

  struct Case {
    const char* name;
    std::vector<uint8_t> value;
    const char* expected;
  };
  std::vector<Case> cases;
  cases.push_back({"empty", {}, "holds 0 bytes, fewer than the 16-byte header"});
  cases.push_back({"header cut", std::vector<uint8_t>(good.begin(), good.begin() + 10), "fewer than the 16-byte"});
  cases.push_back({"descriptor cut", std::vector<uint8_t>(good.begin(), good.end() - 1), "holds 47 bytes"});
  auto longer = good;
  longer.push_back(0);
  cases.push_back({"trailing byte", longer, "holds 49 bytes"});
  auto bad_magic = good;
  bad_magic[0] ^= 0xFF;
  cases.push_back({"magic", bad_magic, "expected region magic"});
  auto bad_descriptor = good;
  bad_descriptor[16] ^= 0xFF;  // the descriptor's own magic
  cases.push_back({"descriptor magic", bad_descriptor, "region 0: remote descriptor magic"});
  auto huge_count = good;
  huge_count[11] = 0xFF;  // claims 2^24 + 1 descriptors
  cases.push_back({"count", huge_count, "announces 4278190081 descriptors"});

  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(store.set("job/sfb/5", c.value).isOk());
    auto got = ranks.fetch(5, needs, Deadline::after(1s));
    ASSERT_FALSE(got.isOk());
    EXPECT_EQ(got.status().code(), StatusCode::kProtocolError) << got.status().toString();
    EXPECT_TRUE(contains(got.status(), c.expected)) << got.status().toString();
    EXPECT_TRUE(contains(got.status(), "SFB receive buffer of rank 5")) << got.status().toString();
    EXPECT_TRUE(contains(got.status(), "job/sfb/5")) << got.status().toString();
  }
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
