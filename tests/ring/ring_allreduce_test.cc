// Ring all-reduce over an in-process mesh of TCP contexts, one thread per worker: sums against a
// double-precision reference within the bound of P-term float summation, bit-identical on every
// rank, counters equal to the cost model's trainer::ringNodeTraffic, and failures that name the peer.
#include "ring/ring_allreduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "ring/ring_imm.h"
#include "ring/ring_setup.h"
#include "tests/support/mesh.h"
#include "trainer/hybcomm/cost_model.h"

namespace poseidon::ring {
namespace {

using namespace std::chrono_literals;

constexpr auto kCallTimeout = 60s;

// Runs f(rank) on one thread per rank and waits for all.
void onEveryRank(int ranks, const std::function<void(int)>& f) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < ranks; ++rank) threads.emplace_back(f, rank);
  for (auto& thread : threads) thread.join();
}

std::unique_ptr<transport::bootstrap::FileStore> openStore(testing::Mesh& mesh) {
  auto store = transport::bootstrap::FileStore::open(mesh.dir->path());
  if (!store) throw StatusError(store.status());
  return std::move(*store);
}

struct Ring {
  testing::Mesh mesh;
  std::vector<std::unique_ptr<RingAllreduce>> ranks;
  int size() const { return static_cast<int>(ranks.size()); }
};

Ring startRing(int size, const std::vector<model::Layer>& layers, const RingOptions& options) {
  auto mesh = testing::makeMesh(size, transport::DeviceOptions{}, "ring");
  if (!mesh) throw StatusError(mesh.status());
  Ring ring{std::move(*mesh), {}};
  ring.ranks.resize(static_cast<size_t>(size));
  std::vector<Status> statuses(static_cast<size_t>(size));
  onEveryRank(size, [&](int rank) {
    auto store = openStore(ring.mesh);
    auto started = RingAllreduce::start(ring.mesh[rank], *store, layers, options, Deadline::after(20s));
    if (!started) {
      statuses[static_cast<size_t>(rank)] = started.status();
      return;
    }
    ring.ranks[static_cast<size_t>(rank)] = std::move(*started);
  });
  for (const Status& status : statuses) {
    if (!status.isOk()) throw StatusError(status);
  }
  return ring;
}

// A gradient float of every sign and a spread of exponents, so the sum rounds: a function of
// (rank, layer, call, index) alone, so the reference can recompute it.
float gradient(int rank, size_t layer, int call, size_t i) {
  uint64_t x = (uint64_t(rank) << 56) ^ (uint64_t(layer) << 48) ^ (uint64_t(call) << 40) ^ i;
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const float unit = static_cast<float>(x >> 40) / static_cast<float>(1 << 24) * 2.0f - 1.0f;  // [-1, 1)
  return std::ldexp(unit, static_cast<int>(x & 7) - 3);
}

void fill(RingAllreduce& ring, size_t layer, int call) {
  auto buffer = ring.buffer(layer);
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = gradient(ring.rank(), layer, call, i);
}

// Recursive summation of P floats errs by at most gamma(P-1) * sum |x| (Higham, Accuracy and
// Stability of Numerical Algorithms, eq. 4.4), whatever the order: gamma(n) = nu / (1 - nu),
// u = 2^-24. One term alone is exact.
double tolerance(int ranks, double sum_of_magnitudes) {
  const double u = std::ldexp(1.0, -24);
  const double n = ranks - 1;
  return n * u / (1 - n * u) * sum_of_magnitudes;
}

// Every rank's buffer equals the first rank's bit for bit, which is within tolerance of the sum.
void expectSummed(Ring& ring, size_t layer, int call) {
  const auto first = ring.ranks[0]->buffer(layer);
  size_t bad = 0;
  for (size_t i = 0; i < first.size(); ++i) {
    double sum = 0, magnitudes = 0;
    for (int p = 0; p < ring.size(); ++p) {
      const double g = gradient(p, layer, call, i);
      sum += g;
      magnitudes += std::fabs(g);
    }
    if (std::fabs(first[i] - sum) > tolerance(ring.size(), magnitudes) && bad++ < 5) {
      ADD_FAILURE() << "layer " << layer << " call " << call << " float " << i << ": " << first[i] << ", expected "
                    << sum << " within " << tolerance(ring.size(), magnitudes);
    }
  }
  for (int p = 1; p < ring.size(); ++p) {
    const auto other = ring.ranks[static_cast<size_t>(p)]->buffer(layer);
    ASSERT_EQ(other.size(), first.size());
    EXPECT_EQ(std::memcmp(other.data(), first.data(), first.size_bytes()), 0)
        << "rank " << p << " differs from rank 0 in layer " << layer << " after call " << call;
  }
}

// floor((c+1)X/P) - floor(cX/P): the ring's segments, written out here rather than taken from
// RingGeometry so the counters are checked against an independent count.
uint64_t segment(uint64_t floats, int ranks, int c) {
  const auto at = [&](int k) { return floats * static_cast<uint64_t>(k) / static_cast<uint64_t>(ranks); };
  c %= ranks;
  return at(c + 1) - at(c);
}

uint64_t piecesOf(uint64_t floats, uint64_t piece_floats) { return (floats + piece_floats - 1) / piece_floats; }

void expectTraffic(const Ring& ring, size_t layer, uint64_t floats, uint64_t calls, const RingOptions& options) {
  const int p = ring.size();
  // piece_bytes, or a quarter of the largest segment when that is smaller (not under 16 KiB).
  const uint64_t largest = (floats + static_cast<uint64_t>(p) - 1) / static_cast<uint64_t>(p);
  const uint64_t max_floats = options.piece_bytes / sizeof(float);
  const uint64_t piece_floats = std::min(max_floats, std::max((largest + 3) / 4, std::min<uint64_t>(4096, max_floats)));
  for (int r = 0; r < p; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ", layer " + std::to_string(layer) + ", " + std::to_string(floats) +
                 " floats");
    const RingTraffic t = ring.ranks[static_cast<size_t>(r)]->counters(layer);
    EXPECT_EQ(t.calls, calls);
    if (p == 1) {
      EXPECT_EQ(t.steps + t.sent_bytes + t.received_bytes + t.sent_messages + t.received_messages + t.sent_pieces +
                    t.received_pieces + t.credits_sent + t.credits_received,
                0u);
      continue;
    }
    EXPECT_EQ(t.steps, calls * 2 * static_cast<uint64_t>(p - 1));
    // Reduce-scatter sends every segment but r + 1, the all-gather every one but r + 2; the
    // predecessor's sends are what r receives.
    const uint64_t sent = 2 * floats - segment(floats, p, r + 1) - segment(floats, p, r + 2);
    const uint64_t received = 2 * floats - segment(floats, p, r) - segment(floats, p, r + 1);
    EXPECT_EQ(t.sent_bytes, calls * sent * sizeof(float));
    EXPECT_EQ(t.received_bytes, calls * received * sizeof(float));
    uint64_t reduce_pieces_in = 0, pieces_in = 0, pieces_out = 0, reduce_pieces_out = 0;
    for (int step = 0; step < 2 * (p - 1); ++step) {
      const uint64_t out = piecesOf(segment(floats, p, ((r - step) % p + p) % p), piece_floats);
      const uint64_t in = piecesOf(segment(floats, p, ((r - step - 1) % p + p) % p), piece_floats);
      pieces_out += out;
      pieces_in += in;
      if (step < p - 1) {
        reduce_pieces_out += out;
        reduce_pieces_in += in;
      }
    }
    EXPECT_EQ(t.sent_pieces, calls * pieces_out);
    EXPECT_EQ(t.received_pieces, calls * pieces_in);
    EXPECT_EQ(t.credits_sent, calls * reduce_pieces_in);
    // The successor's last credits may still be on their way: at most a staging-full.
    EXPECT_LE(t.credits_received, calls * reduce_pieces_out);
    EXPECT_GE(t.credits_received + options.staging_slots, calls * reduce_pieces_out);

    if (floats >= static_cast<uint64_t>(p)) {  // no empty segment: one message per step each way
      EXPECT_EQ(t.sent_messages, calls * 2 * static_cast<uint64_t>(p - 1));
      EXPECT_EQ(t.received_messages, calls * 2 * static_cast<uint64_t>(p - 1));
    }
    if (floats % static_cast<uint64_t>(p) == 0 && floats > 0) {
      auto model = trainer::ringNodeTraffic(model::Layer::other("l", floats), trainer::ClusterShape{p, p, 1});
      ASSERT_TRUE(model.isOk()) << model.status().toString();
      EXPECT_EQ(static_cast<double>(t.sent_bytes), model->sent_floats * sizeof(float) * static_cast<double>(calls));
      EXPECT_EQ(static_cast<double>(t.received_bytes),
                model->received_floats * sizeof(float) * static_cast<double>(calls));
      EXPECT_EQ(static_cast<double>(t.sent_bytes + t.received_bytes),
                model->floats() * sizeof(float) * static_cast<double>(calls));
      EXPECT_EQ(static_cast<int64_t>(t.sent_messages), model->sent_messages * static_cast<int64_t>(calls));
      EXPECT_EQ(static_cast<int64_t>(t.received_messages), model->received_messages * static_cast<int64_t>(calls));
    }
  }
}

// Calls every layer of `ring` on every rank, `calls` times (the layer order reversed on odd
// calls, the same on every rank), checking the sums after each round.
void runRounds(Ring& ring, int calls) {
  const size_t layers = ring.ranks[0]->layerCount();
  for (int call = 0; call < calls; ++call) {
    std::vector<Status> statuses(ring.ranks.size());
    onEveryRank(ring.size(), [&](int rank) {
      RingAllreduce& r = *ring.ranks[static_cast<size_t>(rank)];
      for (size_t l = 0; l < layers; ++l) fill(r, l, call);
      for (size_t k = 0; k < layers; ++k) {
        const size_t l = call % 2 == 0 ? k : layers - 1 - k;
        Status status = r.allreduce(l, Deadline::after(kCallTimeout));
        if (!status.isOk()) {
          statuses[static_cast<size_t>(rank)] = status;
          return;
        }
      }
    });
    for (const Status& status : statuses) ASSERT_TRUE(status.isOk()) << status.toString();
    for (size_t l = 0; l < layers; ++l) expectSummed(ring, l, call);
  }
}

class RingSizes : public ::testing::TestWithParam<int> {};

TEST_P(RingSizes, SumsSmallAndUnevenLayersAndCountsLikeTheCostModel) {
  const int p = GetParam();
  RingOptions options;
  options.piece_bytes = 4096;
  options.staging_slots = 3;
  // One float, P-1 floats (fewer than the ring: empty segments), divisible with one and with
  // several pieces per segment, and not divisible.
  const std::vector<uint64_t> sizes{1,
                                    static_cast<uint64_t>(p - 1),
                                    1000 * static_cast<uint64_t>(p),
                                    3000 * static_cast<uint64_t>(p),
                                    3000 * static_cast<uint64_t>(p) + 3,
                                    7 * static_cast<uint64_t>(p) + 1};
  std::vector<model::Layer> layers;  // of one tensor each, priced and synced by their count
  for (size_t i = 0; i < sizes.size(); ++i)
    layers.push_back(model::Layer::other("layer" + std::to_string(i), sizes[i]));
  Ring ring = startRing(p, layers, options);
  constexpr int kCalls = 3;
  runRounds(ring, kCalls);
  for (size_t l = 0; l < sizes.size(); ++l) expectTraffic(ring, l, sizes[l], kCalls, options);
}

TEST_P(RingSizes, PipelinesSeveralMiBThroughTwoStagingSlots) {
  const int p = GetParam();
  if (p == 1) GTEST_SKIP() << "one worker moves nothing";
  RingOptions options;
  options.piece_bytes = 4096;
  options.staging_slots = 2;  // every slot is reused hundreds of times per call
  const uint64_t big = (uint64_t{3} << 20) / sizeof(float) * static_cast<uint64_t>(p) / 2 + 5;  // ~1.5 MiB per rank x P
  const uint64_t even = (uint64_t{1} << 20) / sizeof(float) * static_cast<uint64_t>(p);
  Ring ring = startRing(p, {model::Layer::other("big", big), model::Layer::other("even", even)}, options);
  runRounds(ring, 2);
  expectTraffic(ring, 0, big, 2, options);
  expectTraffic(ring, 1, even, 2, options);
  EXPECT_GT(ring.ranks[0]->counters(0).credits_sent, 100 * options.staging_slots);
}

// Small layers under the default 1 MiB pieces: each segment still goes in at least four pieces
// (at least 16 KiB each), so the steps overlap; a 1 MiB layer on 4 ranks sends 4 per step. (One
// worker moves nothing: expectTraffic checks that every counter stays 0.)
TEST_P(RingSizes, SmallLayersUnderTheDefaultPieceAreCutIntoFourPiecesPerSegment) {
  const int p = GetParam();
  const RingOptions options;                                                             // piece_bytes 1 MiB
  const std::vector<uint64_t> sizes{uint64_t{1} << 18, (uint64_t{1} << 20) + 7, 20000};  // 1 MiB, 4 MiB, 80 kB
  std::vector<model::Layer> layers;
  for (size_t i = 0; i < sizes.size(); ++i)
    layers.push_back(model::Layer::other("layer" + std::to_string(i), sizes[i]));
  Ring ring = startRing(p, layers, options);
  runRounds(ring, 2);
  for (size_t l = 0; l < sizes.size(); ++l) expectTraffic(ring, l, sizes[l], 2, options);
  if (p == 4) {
    EXPECT_EQ(ring.ranks[0]->counters(0).sent_pieces, 2u * 6 * 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Workers, RingSizes, ::testing::Values(1, 2, 3, 4, 5),
                         [](const ::testing::TestParamInfo<int>& workers) {
                           return "P" + std::to_string(workers.param);
                         });

TEST(RingAllreduce, OneWorkerIsTheIdentity) {
  Ring ring = startRing(1, {model::Layer::other("w", 10)}, RingOptions{});
  fill(*ring.ranks[0], 0, 0);
  ASSERT_TRUE(ring.ranks[0]->allreduce(0, Deadline::after(1s)).isOk());
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(ring.ranks[0]->buffer(0)[i], gradient(0, 0, 0, i));
  EXPECT_EQ(ring.ranks[0]->counters(0).calls, 1u);
  EXPECT_EQ(ring.ranks[0]->counters(0).sent_bytes, 0u);
}

TEST(RingAllreduce, RefusesBadOptionsAndIndices) {
  auto mesh = testing::makeMesh(1, transport::DeviceOptions{}, "ring");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto store = openStore(*mesh);
  RingOptions odd;
  odd.piece_bytes = 6;
  auto started = RingAllreduce::start((*mesh)[0], *store, {model::Layer::other("w", 4)}, odd, Deadline::after(1s));
  ASSERT_FALSE(started.isOk());
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(started.status().message().find("piece_bytes 6"), std::string::npos) << started.status().toString();
  RingOptions no_slots;
  no_slots.staging_slots = 0;
  started = RingAllreduce::start((*mesh)[0], *store, {model::Layer::other("w", 4)}, no_slots, Deadline::after(1s));
  ASSERT_FALSE(started.isOk());
  EXPECT_NE(started.status().message().find("staging_slots 0"), std::string::npos) << started.status().toString();

  started = RingAllreduce::start((*mesh)[0], *store, {model::Layer::other("w", 4)}, RingOptions{}, Deadline::after(1s));
  ASSERT_TRUE(started.isOk()) << started.status().toString();
  Status status = (*started)->allreduce(1, Deadline::after(1s));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
  EXPECT_TRUE((*started)->buffer(1).empty());
}

TEST(RingAllreduce, NeighboursWithOtherLayersAreRefusedAtStart) {
  auto mesh = testing::makeMesh(3, transport::DeviceOptions{}, "ring");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  std::vector<Status> statuses(3);
  onEveryRank(3, [&](int rank) {
    auto store = openStore(*mesh);
    const uint64_t floats = rank == 1 ? 101 : 100;
    statuses[static_cast<size_t>(rank)] =
        RingAllreduce::start((*mesh)[rank], *store, {model::Layer::other("fc", floats)}, RingOptions{},
                             Deadline::after(10s))
            .status();
  });
  for (int rank : {0, 2}) {  // rank 1's neighbours
    const Status& status = statuses[static_cast<size_t>(rank)];
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
    EXPECT_NE(status.message().find("rank 1"), std::string::npos) << status.toString();
    EXPECT_NE(status.message().find("'fc' of 101 floats"), std::string::npos) << status.toString();
  }
  EXPECT_EQ(statuses[1].code(), StatusCode::kInvalidArgument) << statuses[1].toString();
}

TEST(RingAllreduce, CallsOfOneRankRunOneAtATimeInCallOrder) {
  Ring ring = startRing(2, {model::Layer::other("a", 1000), model::Layer::other("b", 3000)}, RingOptions{});
  for (auto& r : ring.ranks) {
    fill(*r, 0, 0);
    fill(*r, 1, 0);
  }
  // Rank 0 calls layer a, then (from another thread, while a waits for rank 1) layer b; rank 1
  // calls a then b later. b must queue behind a, or rank 0 would run them out of order.
  Status a, b;
  std::thread first([&] { a = ring.ranks[0]->allreduce(0, Deadline::after(kCallTimeout)); });
  std::this_thread::sleep_for(100ms);
  std::thread second([&] { b = ring.ranks[0]->allreduce(1, Deadline::after(kCallTimeout)); });
  std::this_thread::sleep_for(100ms);
  const Status peer_a = ring.ranks[1]->allreduce(0, Deadline::after(kCallTimeout));
  const Status peer_b = ring.ranks[1]->allreduce(1, Deadline::after(kCallTimeout));
  first.join();
  second.join();
  ASSERT_TRUE(a.isOk()) << a.toString();
  ASSERT_TRUE(b.isOk()) << b.toString();
  ASSERT_TRUE(peer_a.isOk()) << peer_a.toString();
  ASSERT_TRUE(peer_b.isOk()) << peer_b.toString();
  expectSummed(ring, 0, 0);
  expectSummed(ring, 1, 0);
}

TEST(RingAllreduce, ACallThatCannotGetItsTurnInTimeBreaksTheRing) {
  Ring ring = startRing(2, {model::Layer::other("a", 10), model::Layer::other("b", 10)}, RingOptions{});
  Status a;
  std::thread first([&] { a = ring.ranks[0]->allreduce(0, Deadline::after(2s)); });  // rank 1 never calls
  std::this_thread::sleep_for(100ms);
  Status b = ring.ranks[0]->allreduce(1, Deadline::after(200ms));
  first.join();
  EXPECT_EQ(b.code(), StatusCode::kTimeout) << b.toString();
  EXPECT_NE(b.message().find("call before it (layer 'a')"), std::string::npos) << b.toString();
  EXPECT_EQ(a.code(), StatusCode::kTimeout) << a.toString();
  Status later = ring.ranks[0]->allreduce(0, Deadline::after(1s));
  EXPECT_FALSE(later.isOk());
  EXPECT_NE(later.message().find("earlier allreduce failed"), std::string::npos) << later.toString();
}

// Rank `silent` started but never calls: each other rank fails at its deadline, its own
// predecessor and successor name the silent rank (one waits for its pieces, the other for it to
// take ours), and the ring stays broken.
TEST(RingAllreduce, APeerThatNeverCallsFailsTheOthersByTheDeadlineNamingIt) {
  constexpr int kRanks = 3;
  constexpr int kSilent = 2;
  Ring ring = startRing(kRanks, {model::Layer::other("fc", 3000)}, RingOptions{});
  std::vector<Status> statuses(kRanks);
  std::vector<double> seconds(kRanks);
  constexpr auto kDeadline = 1500ms;
  onEveryRank(kRanks, [&](int rank) {
    if (rank == kSilent) return;
    fill(*ring.ranks[static_cast<size_t>(rank)], 0, 0);
    const auto began = std::chrono::steady_clock::now();
    statuses[static_cast<size_t>(rank)] =
        ring.ranks[static_cast<size_t>(rank)]->allreduce(0, Deadline::after(kDeadline));
    seconds[static_cast<size_t>(rank)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  });
  for (int rank : {0, 1}) {
    const Status& status = statuses[static_cast<size_t>(rank)];
    EXPECT_EQ(status.code(), StatusCode::kTimeout) << status.toString();
    EXPECT_NE(status.message().find("rank 2 ("), std::string::npos) << status.toString();
    EXPECT_NE(status.message().find("layer 'fc'"), std::string::npos) << status.toString();
    EXPECT_GE(seconds[static_cast<size_t>(rank)], 1.4);
    EXPECT_LT(seconds[static_cast<size_t>(rank)], 5.0);
  }
  EXPECT_NE(statuses[0].message().find("rank 2 (127.0.0.1"), std::string::npos);
  EXPECT_NE(statuses[0].message().find("(our predecessor)"), std::string::npos) << statuses[0].toString();
  const auto began = std::chrono::steady_clock::now();
  Status later = ring.ranks[0]->allreduce(0, Deadline::after(10s));
  EXPECT_EQ(later.code(), StatusCode::kTimeout) << later.toString();
  EXPECT_LT(std::chrono::steady_clock::now() - began, 1s) << "a broken ring fails at once";
}

// After one good call, rank 3 goes away (its context closes) while the others are in their next
// call: each of them fails promptly, long before its deadline, naming rank 3 - its ring
// neighbours through their own pairs, the rank opposite through the pair it watches.
TEST(RingAllreduce, APeerWhosePairsCloseFailsTheOthersPromptlyNamingIt) {
  constexpr int kRanks = 4;
  constexpr int kGone = 3;
  RingOptions options;
  options.piece_bytes = 4096;
  Ring ring = startRing(kRanks, {model::Layer::other("conv", 200000)}, options);
  runRounds(ring, 1);
  std::vector<Status> statuses(kRanks);
  std::vector<double> seconds(kRanks);
  onEveryRank(kRanks, [&](int rank) {
    if (rank == kGone) {
      std::this_thread::sleep_for(300ms);
      ring.ranks[kGone].reset();
      ring.mesh.contexts[kGone].reset();
      return;
    }
    fill(*ring.ranks[static_cast<size_t>(rank)], 0, 1);
    const auto began = std::chrono::steady_clock::now();
    statuses[static_cast<size_t>(rank)] = ring.ranks[static_cast<size_t>(rank)]->allreduce(0, Deadline::after(30s));
    seconds[static_cast<size_t>(rank)] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  });
  for (int rank = 0; rank < kGone; ++rank) {
    const Status& status = statuses[static_cast<size_t>(rank)];
    EXPECT_EQ(status.code(), StatusCode::kConnectionError) << "rank " << rank << ": " << status.toString();
    EXPECT_NE(status.message().find("rank 3 ("), std::string::npos) << status.toString();
    EXPECT_LT(seconds[static_cast<size_t>(rank)], 5.0) << "rank " << rank;
  }
}

// A fake rank 1 publishes another piece size, then (under a fresh ring name) the same ring with
// too small a staging: rank 0 refuses each at start, naming rank 1 and what is wrong.
TEST(RingAllreduce, ANeighbourWithOtherOptionsOrTooSmallARegionIsRefusedAtStart) {
  auto mesh = testing::makeMesh(2, transport::DeviceOptions{}, "ring");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto store = openStore(*mesh);
  const std::vector<model::Layer> layers{model::Layer::other("w", 100)};
  RingOptions options;
  options.piece_bytes = 4096;
  testing::Buffer data = testing::makeBuffer((*mesh)[1], 100 * sizeof(float));
  testing::Buffer staging = testing::makeBuffer((*mesh)[1], 4096);
  const RingRegions regions{data.region->remote(), staging.region->remote()};

  options.name = "other_piece";
  const RingSetup other_piece{2, 8192, options.staging_slots, publishedLayers(layers)};
  ASSERT_TRUE(publishRingSetup({*store, options.name, (*mesh)[1].name()}, 1, other_piece, regions).isOk());
  auto started = RingAllreduce::start((*mesh)[0], *store, layers, options, Deadline::after(5s));
  ASSERT_FALSE(started.isOk());
  EXPECT_EQ(started.status().code(), StatusCode::kInvalidArgument) << started.status().toString();
  EXPECT_NE(started.status().message().find("rank 1 has piece_bytes = 8192, rank 0 has 4096"), std::string::npos)
      << started.status().toString();

  options.name = "small_staging";  // the staging holds one piece of the eight slots
  const RingSetup same{2, options.piece_bytes, options.staging_slots, publishedLayers(layers)};
  ASSERT_TRUE(publishRingSetup({*store, options.name, (*mesh)[1].name()}, 1, same, regions).isOk());
  started = RingAllreduce::start((*mesh)[0], *store, layers, options, Deadline::after(5s));
  ASSERT_FALSE(started.isOk());
  EXPECT_EQ(started.status().code(), StatusCode::kProtocolError) << started.status().toString();
  EXPECT_NE(started.status().message().find("region 1 is 4096 bytes; this side needs at least 32768"),
            std::string::npos)
      << started.status().toString();
  EXPECT_NE(started.status().message().find("rank 1"), std::string::npos) << started.status().toString();
}

// A fake rank 1 publishes a proper set-up, then writes a piece labelled with another layer:
// rank 0 refuses it as a protocol error naming rank 1, and stays broken.
TEST(RingAllreduce, AnUnexpectedImmediateIsAProtocolErrorNamingThePeer) {
  auto mesh = testing::makeMesh(2, transport::DeviceOptions{}, "ring");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto store = openStore(*mesh);
  RingOptions options;
  // An 8 x 8 FC layer with a bias: the ring syncs (and publishes) its 64 weight floats only.
  const std::vector<model::Layer> layers{model::Layer::fullyConnected("fc", 8, 8, true)};
  testing::Buffer data = testing::makeBuffer((*mesh)[1], 64 * sizeof(float));
  testing::Buffer staging = testing::makeBuffer((*mesh)[1], options.piece_bytes * options.staging_slots);
  const RingSetup setup{2, options.piece_bytes, options.staging_slots, publishedLayers(layers)};
  const RingRendezvous where{*store, options.name, (*mesh)[1].name()};
  ASSERT_TRUE(publishRingSetup(where, 1, setup, {data.region->remote(), staging.region->remote()}).isOk());

  auto ring = RingAllreduce::start((*mesh)[0], *store, layers, options, Deadline::after(10s));
  ASSERT_TRUE(ring.isOk()) << ring.status().toString();
  // Rank 0 published the 64 weight floats: fetching its set-up as a ring of that one layer fails otherwise.
  const RingSetup weights_only{2, options.piece_bytes, options.staging_slots, {{"fc", 64}}};
  auto rank0 = fetchRingSetup(where, 1, weights_only, 0, "rank 0", "predecessor", Deadline::after(1s));
  ASSERT_TRUE(rank0.isOk()) << rank0.status().toString();
  auto wrong = (*mesh)[1].pair(0).write(*data.region, 0, rank0->staging, 0, 32 * sizeof(float),
                                        ringPieceImm(RingImmType::kReduce, /*layer=*/5, 0, 0));
  ASSERT_TRUE(wrong->wait(Deadline::after(5s)).isOk());

  Status status = (*ring)->allreduce(0, Deadline::after(5s));
  EXPECT_EQ(status.code(), StatusCode::kProtocolError) << status.toString();
  EXPECT_NE(status.message().find("rank 1 ("), std::string::npos) << status.toString();
  EXPECT_NE(status.message().find("layer 5"), std::string::npos) << status.toString();
  Status later = (*ring)->allreduce(0, Deadline::after(5s));
  EXPECT_EQ(later.code(), StatusCode::kProtocolError) << later.toString();
}

}  // namespace
}  // namespace poseidon::ring
