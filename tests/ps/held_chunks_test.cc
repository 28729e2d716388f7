// HeldChunks: the held sends of both PS ends leave by key, equal keys in held order, while the
// window has room, and one always goes when nothing is in flight.
#include "ps/held_chunks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

namespace poseidon::ps {
namespace {

// Releases everything the window lets go; returns the chunks in the order sent.
std::vector<uint32_t> releaseAll(HeldChunks& held, uint64_t& in_flight, uint64_t window,
                                 const std::vector<uint64_t>& bytes) {
  std::vector<uint32_t> sent;
  held.release(
      in_flight, window, [&](uint32_t c) { return bytes[c]; }, [&](uint32_t c) { sent.push_back(c); });
  return sent;
}

TEST(HeldChunks, EqualKeysLeaveInHeldOrderAndSmallerKeysFirst) {
  const std::vector<uint64_t> bytes(8, 10);
  HeldChunks held;
  for (uint32_t c : {5u, 2u, 7u}) held.hold(0, c);  // FIFO: one key for all
  uint64_t in_flight = 0;
  EXPECT_EQ(releaseAll(held, in_flight, 1000, bytes), (std::vector<uint32_t>{5, 2, 7}));
  for (uint32_t c : {5u, 2u, 7u, 2u}) held.hold(c, c);  // by index (priority), a repeat allowed
  EXPECT_EQ(releaseAll(held, in_flight, 1000, bytes), (std::vector<uint32_t>{2, 2, 5, 7}));
  EXPECT_EQ(in_flight, 70u);
}

TEST(HeldChunks, TheWindowHoldsBackWhatDoesNotFitButOneAlwaysGoes) {
  const std::vector<uint64_t> bytes{30, 30, 100};
  HeldChunks held;
  held.hold(2, 2);
  held.hold(0, 0);
  held.hold(1, 1);
  uint64_t in_flight = 0;
  EXPECT_EQ(releaseAll(held, in_flight, 50, bytes), (std::vector<uint32_t>{0}));  // 0 + 1 would be 60
  EXPECT_EQ(held.size(), 2u);
  EXPECT_EQ(releaseAll(held, in_flight, 60, bytes), (std::vector<uint32_t>{1}));  // exactly full is room
  EXPECT_EQ(in_flight, 60u);
  EXPECT_TRUE(releaseAll(held, in_flight, 60, bytes).empty());
  in_flight = 0;                                                                  // both done
  EXPECT_EQ(releaseAll(held, in_flight, 50, bytes), (std::vector<uint32_t>{2}));  // larger than the window
  EXPECT_TRUE(held.empty());
}

TEST(HeldChunks, EraseForgetsOneEntryAndKeepsTheOrderOfTheRest) {
  const std::vector<uint64_t> bytes(8, 1);
  HeldChunks held;
  for (uint32_t c : {6u, 1u, 4u, 3u}) held.hold(c, c);
  EXPECT_TRUE(held.erase(4));
  EXPECT_FALSE(held.erase(4));
  EXPECT_FALSE(held.erase(7));
  uint64_t in_flight = 0;
  EXPECT_EQ(releaseAll(held, in_flight, 100, bytes), (std::vector<uint32_t>{1, 3, 6}));
}

// Random holds, erases and releases against a plain sorted list of (key, order held, chunk).
TEST(HeldChunks, MatchesASortedReferenceUnderRandomUse) {
  struct Ref {
    uint64_t key, order;
    uint32_t chunk;
  };
  std::mt19937 random(14);
  for (int round = 0; round < 200; ++round) {
    std::vector<uint64_t> bytes(12);
    for (uint64_t& b : bytes) b = 1 + random() % 40;
    HeldChunks held;
    std::vector<Ref> ref;
    uint64_t order = 0, in_flight = 0, ref_in_flight = 0;
    for (int op = 0; op < 60; ++op) {
      const uint32_t chunk = static_cast<uint32_t>(random() % bytes.size());
      switch (random() % 4) {
        case 0:
        case 1: {
          const uint64_t key = random() % 4;
          held.hold(key, chunk);
          ref.push_back({key, order++, chunk});
          break;
        }
        case 2: {
          auto first = ref.end();
          for (auto r = ref.begin(); r != ref.end(); ++r) {
            if (r->chunk == chunk && (first == ref.end() || r->order < first->order)) first = r;
          }
          ASSERT_EQ(held.erase(chunk), first != ref.end());
          if (first != ref.end()) ref.erase(first);
          break;
        }
        default: {
          const uint64_t window = random() % 80;
          if (random() % 2 == 0) in_flight = ref_in_flight = 0;  // what was in flight is done
          const std::vector<uint32_t> sent = releaseAll(held, in_flight, window, bytes);
          std::vector<uint32_t> expected;
          std::sort(ref.begin(), ref.end(),
                    [](const Ref& a, const Ref& b) { return std::tie(a.key, a.order) < std::tie(b.key, b.order); });
          while (!ref.empty() && (ref_in_flight == 0 || ref_in_flight + bytes[ref.front().chunk] <= window)) {
            ref_in_flight += bytes[ref.front().chunk];
            expected.push_back(ref.front().chunk);
            ref.erase(ref.begin());
          }
          ASSERT_EQ(sent, expected) << "round " << round << ", op " << op;
          ASSERT_EQ(in_flight, ref_in_flight);
        }
      }
      ASSERT_EQ(held.size(), ref.size());
    }
  }
}

}  // namespace
}  // namespace poseidon::ps
