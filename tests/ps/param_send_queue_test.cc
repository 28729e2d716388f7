// ParamSendQueue: a server's parameter writes to a worker with priority go nearest the input
// first, at most the window in the transport, one chunk always; workers do not hold each other up.
#include "ps/param_send_queue.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace poseidon::ps {
namespace {

constexpr uint64_t kChunkBytes = 100;

// The transport: records each post and hands out a write the test completes.
class FakeWrites {
 public:
  transport::RequestPtr post(int worker, uint32_t chunk) {
    std::lock_guard lock(mutex_);
    posted_.emplace_back(worker, chunk);
    if (gone_.count(worker) > 0) return nullptr;
    auto write = std::make_shared<transport::Request>("write");
    writes_.push_back(write);
    return write;
  }

  void leave(int worker) {
    std::lock_guard lock(mutex_);
    gone_[worker] = true;
  }

  // Waits until `count` posts were made; returns them.
  std::vector<std::pair<int, uint32_t>> posted(size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (posted_.size() >= count || std::chrono::steady_clock::now() > deadline) return posted_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  // The n-th write posted (0-based) finishes.
  void finish(size_t n) {
    std::lock_guard lock(mutex_);
    writes_.at(n)->complete(Status::ok());
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, uint32_t>> posted_;
  std::vector<transport::RequestPtr> writes_;
  std::map<int, bool> gone_;
};

using Posted = std::vector<std::pair<int, uint32_t>>;

TEST(ParamSendQueue, HeldWritesGoNearestTheInputFirstAsTheWindowOpens) {
  FakeWrites writes;
  ParamSendQueue queue(1, std::vector<uint64_t>(16, kChunkBytes), 2 * kChunkBytes,
                       [&writes](int worker, uint32_t chunk) { return writes.post(worker, chunk); });
  ASSERT_TRUE(queue.start().isOk());
  // The backward pass's order: the output's chunks are ready first.
  queue.enqueue(0, 9);
  ASSERT_EQ(writes.posted(1), (Posted{{0, 9}}));
  queue.enqueue(0, 8);
  ASSERT_EQ(writes.posted(2), (Posted{{0, 9}, {0, 8}}));
  queue.enqueue(0, 7);
  queue.enqueue(0, 2);
  queue.enqueue(0, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(writes.posted(2).size(), 2u) << "posted past a full window";
  EXPECT_EQ(queue.held(), 3u);
  writes.finish(0);
  EXPECT_EQ(writes.posted(3).back(), (std::pair<int, uint32_t>{0, 0}));
  writes.finish(1);
  EXPECT_EQ(writes.posted(4).back(), (std::pair<int, uint32_t>{0, 2}));
  writes.finish(2);
  writes.finish(3);
  EXPECT_EQ(writes.posted(5).back(), (std::pair<int, uint32_t>{0, 7}));
  EXPECT_EQ(queue.held(), 0u);
}

// Two answered pulls of one chunk are two writes; a chunk bigger than the window still goes.
TEST(ParamSendQueue, RepeatedChunksGoInQueuedOrderAndOneChunkAlwaysGoes) {
  FakeWrites writes;
  ParamSendQueue queue(1, std::vector<uint64_t>(16, kChunkBytes), kChunkBytes / 2,
                       [&writes](int worker, uint32_t chunk) { return writes.post(worker, chunk); });
  ASSERT_TRUE(queue.start().isOk());
  queue.enqueue(0, 4);
  ASSERT_EQ(writes.posted(1), (Posted{{0, 4}}));
  queue.enqueue(0, 4);
  queue.enqueue(0, 5);
  queue.enqueue(0, 4);
  writes.finish(0);
  EXPECT_EQ(writes.posted(2).back(), (std::pair<int, uint32_t>{0, 4}));
  writes.finish(1);
  EXPECT_EQ(writes.posted(3).back(), (std::pair<int, uint32_t>{0, 4}));
  writes.finish(2);
  EXPECT_EQ(writes.posted(4).back(), (std::pair<int, uint32_t>{0, 5}));
}

TEST(ParamSendQueue, AFullWindowHoldsOnlyItsOwnWorkerAndAGoneWorkerFreesIt) {
  FakeWrites writes;
  ParamSendQueue queue(3, std::vector<uint64_t>(16, kChunkBytes), kChunkBytes,
                       [&writes](int worker, uint32_t chunk) { return writes.post(worker, chunk); });
  ASSERT_TRUE(queue.start().isOk());
  queue.enqueue(0, 1);
  queue.enqueue(0, 2);  // held: worker 0's window is full
  ASSERT_EQ(writes.posted(1).size(), 1u);
  queue.enqueue(1, 3);
  EXPECT_EQ(writes.posted(2).back(), (std::pair<int, uint32_t>{1, 3}));
  writes.leave(2);
  queue.enqueue(2, 1);
  queue.enqueue(2, 2);  // the first went nowhere: no write holds the window
  EXPECT_EQ(writes.posted(4), (Posted{{0, 1}, {1, 3}, {2, 1}, {2, 2}}));
  EXPECT_EQ(queue.held(), 1u);
}

// A server whose workers never ask for priority starts no thread: the queue is built and destroyed
// idle, and start() is idempotent.
TEST(ParamSendQueue, NoThreadUntilStartedAndStartTwiceIsOne) {
  FakeWrites writes;
  { ParamSendQueue idle(2, std::vector<uint64_t>(4, kChunkBytes), kChunkBytes, nullptr); }
  ParamSendQueue queue(1, std::vector<uint64_t>(4, kChunkBytes), kChunkBytes,
                       [&writes](int worker, uint32_t chunk) { return writes.post(worker, chunk); });
  ASSERT_TRUE(queue.start().isOk());
  ASSERT_TRUE(queue.start().isOk());
  queue.enqueue(0, 3);
  EXPECT_EQ(writes.posted(1), (Posted{{0, 3}}));
}

}  // namespace
}  // namespace poseidon::ps
