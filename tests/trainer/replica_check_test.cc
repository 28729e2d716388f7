// checkReplicas over a FileStore, one thread per rank: identical bytes pass; one flipped bit, or
// a replica of another length, fails on every rank naming exactly the ranks that differ from
// rank 0 and the iteration; a rank that never publishes times out naming it; a malformed value
// and a bad rank are refused.
#include "trainer/sync/replica_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::trainer {
namespace {

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

std::vector<float> replica(size_t n) {
  std::vector<float> params(n);
  for (size_t i = 0; i < n; ++i) params[i] = 0.25f * static_cast<float>(i) - 3.0f;
  return params;
}

class ReplicaCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = transport::bootstrap::FileStore::open(dir_.path() + "/store");
    ASSERT_TRUE(opened) << opened.status().toString();
    store_ = std::move(*opened);
  }

  // Runs checkReplicas on `size` threads, rank r with params_of(r); returns each rank's status.
  std::vector<Status> run(int size, uint64_t iteration, const std::function<std::vector<float>(int)>& params_of,
                          std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::vector<Status> statuses(static_cast<size_t>(size));
    std::vector<std::thread> threads;
    const Deadline deadline = Deadline::after(timeout);
    for (int r = 0; r < size; ++r) {
      threads.emplace_back([&, r] {
        const std::vector<float> params = params_of(r);
        statuses[static_cast<size_t>(r)] = checkReplicas(*store_, "job/fc6", r, size, iteration, params, deadline);
      });
    }
    for (auto& t : threads) t.join();
    return statuses;
  }

  testing::TempDir dir_;
  std::unique_ptr<transport::bootstrap::FileStore> store_;
};

TEST_F(ReplicaCheckTest, IdenticalReplicasPass) {
  for (const Status& st : run(4, 10, [](int) { return replica(1961); })) EXPECT_TRUE(st.isOk()) << st.toString();
  // One rank alone, and an empty layer, are trivially consistent.
  EXPECT_TRUE(checkReplicas(*store_, "solo", 0, 1, 0, {}, Deadline::after(std::chrono::seconds(1))).isOk());
}

TEST_F(ReplicaCheckTest, OneFlippedBitFailsOnEveryRankNamingThatRankAndTheIteration) {
  const auto statuses = run(4, 7, [](int r) {
    std::vector<float> params = replica(1961);
    if (r == 2) {
      uint32_t bits = 0;
      std::memcpy(&bits, &params[1000], 4);
      bits ^= 1;  // the last bit of the mantissa: numerically "equal" to 1e-7, not bit-identical
      std::memcpy(&params[1000], &bits, 4);
    }
    return params;
  });
  for (size_t r = 0; r < statuses.size(); ++r) {
    const Status& st = statuses[r];
    EXPECT_EQ(st.code(), StatusCode::kInternal) << "rank " << r << ": " << st.toString();
    EXPECT_TRUE(contains(st, "rank 2 (crc32c")) << st.toString();
    EXPECT_FALSE(contains(st, "rank 1 (") || contains(st, "rank 3 (")) << "only rank 2 differs: " << st.toString();
    EXPECT_TRUE(contains(st, "iteration 7")) << st.toString();
    EXPECT_TRUE(contains(st, "'job/fc6'")) << st.toString();
  }
}

TEST_F(ReplicaCheckTest, AReplicaOfAnotherLengthIsNamed) {
  const auto statuses = run(3, 1, [](int r) { return replica(r == 1 ? 100 : 101); });
  for (const Status& st : statuses) {
    EXPECT_EQ(st.code(), StatusCode::kInternal) << st.toString();
    EXPECT_TRUE(contains(st, "rank 1 (crc32c")) << st.toString();
    EXPECT_TRUE(contains(st, "over 100 floats")) << st.toString();
  }
}

TEST_F(ReplicaCheckTest, ARankThatNeverPublishesTimesOutNamingIt) {
  const std::vector<float> params = replica(10);
  const auto begin = Clock::now();
  const Status st = checkReplicas(*store_, "job/fc6", 0, 2, 3, params, Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.toString();
  EXPECT_TRUE(contains(st, "hash of rank 1")) << st.toString();
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(3));
}

TEST_F(ReplicaCheckTest, MalformedValuesAndBadRanksAreRefused) {
  ASSERT_TRUE(store_->set(replicaKey(*store_, "job/fc6", 4, 1), {1, 2, 3}).isOk());
  const std::vector<float> params = replica(10);
  const Deadline deadline = Deadline::after(std::chrono::seconds(5));
  const Status malformed = checkReplicas(*store_, "job/fc6", 0, 2, 4, params, deadline);
  EXPECT_EQ(malformed.code(), StatusCode::kProtocolError) << malformed.toString();
  EXPECT_TRUE(contains(malformed, "rank 1 published 3 bytes")) << malformed.toString();
  EXPECT_EQ(checkReplicas(*store_, "x", 2, 2, 0, params, deadline).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(checkReplicas(*store_, "x", -1, 2, 0, params, deadline).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(checkReplicas(*store_, "x", 0, 0, 0, params, deadline).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace poseidon::trainer
