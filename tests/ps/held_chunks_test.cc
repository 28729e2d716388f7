// HeldChunks: the held sends of both PS ends leave by key, equal keys in held order, while the
// window has room, and one always goes when nothing is in flight.
#include "ps/held_chunks.h"

#include <gtest/gtest.h>

#include <cstdint>
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
  for (uint32_t c : {5u, 2u, 7u, 2u}) held.hold(c, c);  // by index; the repeated 2 after the first
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
  in_flight = 0;  // chunk 0 done
  EXPECT_EQ(releaseAll(held, in_flight, 50, bytes), (std::vector<uint32_t>{1}));
  in_flight = 0;
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

}  // namespace
}  // namespace poseidon::ps
