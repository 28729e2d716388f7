// SerialDriver: work runs in submission order on one thread, each request completes with its
// work's status, and work submitted during shutdown is refused rather than lost or hung.
#include "scheme/serial_driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace poseidon::scheme {
namespace {

TEST(SerialDriver, RunsWorkInSubmissionOrderAndCompletesEachRequestWithItsStatus) {
  SerialDriver driver("test driver");
  std::vector<int> ran;
  std::vector<transport::RequestPtr> requests;
  for (int i = 0; i < 20; ++i) {
    requests.push_back(driver.submit("work " + std::to_string(i), [&ran, i] {
      ran.push_back(i);  // one thread runs every work: no lock needed
      return i == 7 ? makeStatus(StatusCode::kProtocolError, "work 7 fails") : Status::ok();
    }));
  }
  for (int i = 0; i < 20; ++i) {
    const Status waited = requests[static_cast<size_t>(i)]->wait(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(requests[static_cast<size_t>(i)]->test()) << waited.toString();
    const Status& status = requests[static_cast<size_t>(i)]->status();
    if (i == 7) {
      EXPECT_EQ(status.code(), StatusCode::kProtocolError);
      EXPECT_EQ(status.message(), "work 7 fails");
    } else {
      EXPECT_TRUE(status.isOk()) << status.toString();
    }
  }
  std::vector<int> expected(20);
  for (int i = 0; i < 20; ++i) expected[static_cast<size_t>(i)] = i;
  EXPECT_EQ(ran, expected);
  EXPECT_EQ(driver.pending(), 0u);
}

TEST(SerialDriver, SubmitReturnsAtOnceWhileEarlierWorkRuns) {
  SerialDriver driver("test driver");
  std::atomic<bool> release{false};
  auto slow = driver.submit("slow", [&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::ok();
  });
  const auto before = std::chrono::steady_clock::now();
  auto next = driver.submit("next", [] { return Status::ok(); });
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(1));
  EXPECT_FALSE(next->test());
  EXPECT_EQ(next->wait(Deadline::after(std::chrono::milliseconds(50))).code(), StatusCode::kTimeout);
  release = true;
  EXPECT_TRUE(next->wait(Deadline::after(std::chrono::seconds(10))).isOk());
  EXPECT_TRUE(slow->status().isOk());
}

TEST(SerialDriver, WhenDestroyedFinishesTheRunningWorkFailsTheQueuedAndRefusesNew) {
  auto driver = std::make_unique<SerialDriver>("test driver");
  SerialDriver* during_shutdown = driver.get();  // reset() nulls `driver` before the destructor runs
  std::atomic<bool> started{false};
  transport::RequestPtr late;
  auto first = driver->submit("first", [&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // Shutdown has begun by now: the destructor waits for this work.
    late = during_shutdown->submit("late", [] { return Status::ok(); });
    return Status::ok();
  });
  // Queued behind it: would wait forever for a peer that never answers.
  auto queued = driver->submit("queued", [] {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    return Status::ok();
  });
  while (!started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  driver.reset();
  EXPECT_TRUE(first->test() && first->status().isOk());
  ASSERT_TRUE(queued->test());
  EXPECT_EQ(queued->status().code(), StatusCode::kUnavailable);
  EXPECT_NE(queued->status().message().find("test driver shut down before it ran"), std::string::npos)
      << queued->status().toString();
  ASSERT_TRUE(late && late->test());
  EXPECT_EQ(late->status().code(), StatusCode::kUnavailable);
  EXPECT_NE(late->status().message().find("test driver is shutting down"), std::string::npos)
      << late->status().toString();
}

}  // namespace
}  // namespace poseidon::scheme
