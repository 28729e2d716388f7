// SerialDriver: work runs in submission order on one thread (gated work in the order its gates
// open), each request completes with its work's status, and work submitted during shutdown is
// refused rather than lost or hung.
#include "scheme/serial_driver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
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

// A PS layer's push and pull as the gate: the layer whose requests complete first runs first,
// whatever the submission order, and a later one still waits for its own.
TEST(SerialDriver, GatedWorkRunsInTheOrderItsGatesOpen) {
  SerialDriver driver("test driver");
  std::mutex mutex;
  std::vector<std::string> ran;
  auto record = [&](std::string name) {
    return [&, name] {
      std::lock_guard lock(mutex);
      ran.push_back(name);
      return Status::ok();
    };
  };
  auto started = [] { return std::make_shared<transport::Request>("gate"); };
  const auto far = Deadline::after(std::chrono::seconds(30));
  auto fc_push = started(), fc_pull = started(), conv_push = started(), conv_pull = started();
  auto fc = driver.submit("fc", record("fc"), Gate{{fc_push, fc_pull}, far});
  auto conv = driver.submit("conv", record("conv"), Gate{{conv_push, conv_pull}, far});
  conv_push->complete(Status::ok());
  fc_push->complete(Status::ok());
  EXPECT_EQ(conv->wait(Deadline::after(std::chrono::milliseconds(50))).code(), StatusCode::kTimeout)
      << "ran with its pull outstanding";
  conv_pull->complete(Status::ok());
  ASSERT_TRUE(conv->wait(Deadline::after(std::chrono::seconds(10))).isOk());
  EXPECT_FALSE(fc->test()) << "ran with its pull outstanding";
  fc_pull->complete(Status::ok());
  ASSERT_TRUE(fc->wait(Deadline::after(std::chrono::seconds(10))).isOk());
  std::lock_guard lock(mutex);
  EXPECT_EQ(ran, (std::vector<std::string>{"conv", "fc"}));
}

// Among ready work the earliest submitted goes first; work without a gate is always ready.
TEST(SerialDriver, ReadyWorkRunsInSubmissionOrder) {
  SerialDriver driver("test driver");
  std::atomic<bool> release{false};
  std::vector<int> ran;  // one thread runs every work
  auto blocker = driver.submit("blocker", [&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::ok();
  });
  auto done = std::make_shared<transport::Request>("gate");
  done->complete(Status::ok());
  std::vector<transport::RequestPtr> requests;
  for (int i = 0; i < 4; ++i) {
    auto work = [&ran, i] {
      ran.push_back(i);
      return Status::ok();
    };
    requests.push_back(i % 2 == 0 ? driver.submit("work", work, Gate{{done}, Deadline::never()})
                                  : driver.submit("work", work));
  }
  release = true;
  for (const auto& request : requests) ASSERT_TRUE(request->wait(Deadline::after(std::chrono::seconds(10))).isOk());
  EXPECT_TRUE(blocker->status().isOk());
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
}

// A gate whose request never completes opens at its deadline: the work runs and reports what it
// waited for, so the driver's request never hangs.
TEST(SerialDriver, AGateOpensAtItsDeadline) {
  SerialDriver driver("test driver");
  auto silent = std::make_shared<transport::Request>("pull of layer 0");
  const auto begin = Clock::now();
  auto work = driver.submit(
      "layer 0", [silent] { return silent->wait(Deadline(Clock::now())); },
      Gate{{silent}, Deadline::after(std::chrono::milliseconds(100))});
  const Status status = work->wait(Deadline::after(std::chrono::seconds(10)));
  ASSERT_TRUE(work->test()) << status.toString();
  EXPECT_EQ(work->status().code(), StatusCode::kTimeout) << work->status().toString();
  EXPECT_NE(work->status().message().find("pull of layer 0"), std::string::npos) << work->status().toString();
  EXPECT_GE(Clock::now() - begin, std::chrono::milliseconds(100));
}

}  // namespace
}  // namespace poseidon::scheme
