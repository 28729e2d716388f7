// CompletionSignal with Request::signalOnCompletion: one thread waits for whichever of several
// requests completes first, without losing a completion that happens between looking and waiting.
#include "transport/completion_signal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/request.h"

namespace poseidon::transport {
namespace {

TEST(CompletionSignal, AnyRegisteredRequestCompletingMovesTheGeneration) {
  auto signal = std::make_shared<CompletionSignal>();
  std::vector<RequestPtr> requests;
  for (int i = 0; i < 3; ++i) {
    requests.push_back(std::make_shared<Request>("request " + std::to_string(i)));
    requests.back()->signalOnCompletion(signal);
  }
  const uint64_t seen = signal->generation();
  EXPECT_FALSE(signal->waitPast(seen, Deadline::after(std::chrono::milliseconds(20))));
  std::thread completer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    requests[2]->complete(Status::ok());
  });
  EXPECT_TRUE(signal->waitPast(seen, Deadline::after(std::chrono::seconds(10))));
  completer.join();
  EXPECT_TRUE(requests[2]->test());
  EXPECT_FALSE(requests[0]->test());
  // A request completes once: a second complete() is ignored and signals nothing.
  const uint64_t after = signal->generation();
  requests[2]->complete(makeStatus(StatusCode::kInternal, "late"));
  EXPECT_EQ(signal->generation(), after);
  EXPECT_TRUE(requests[2]->status().isOk());
}

TEST(CompletionSignal, ARequestAlreadyCompleteSignalsAtOnce) {
  auto signal = std::make_shared<CompletionSignal>();
  auto request = std::make_shared<Request>("done");
  request->complete(Status::ok());
  const uint64_t seen = signal->generation();
  request->signalOnCompletion(signal);
  EXPECT_NE(signal->generation(), seen);
  EXPECT_TRUE(signal->waitPast(seen, Deadline::never()));
}

// Two threads watching one request (a driver and a pipeline) each get their wake-up: a second
// signal does not replace the first. The same signal given twice is notified once.
TEST(CompletionSignal, EverySignalGivenToARequestIsNotified) {
  auto first = std::make_shared<CompletionSignal>();
  auto second = std::make_shared<CompletionSignal>();
  auto third = std::make_shared<CompletionSignal>();
  auto request = std::make_shared<Request>("watched twice");
  request->signalOnCompletion(first);
  request->signalOnCompletion(second);
  request->signalOnCompletion(second);
  request->signalOnCompletion(first);
  request->signalOnCompletion(third);
  request->signalOnCompletion(nullptr);
  request->complete(Status::ok());
  EXPECT_EQ(first->generation(), 1u);
  EXPECT_EQ(second->generation(), 1u);
  EXPECT_EQ(third->generation(), 1u);
}

// The owner's pattern: read the generation, look, wait. A completion racing the look is never lost.
TEST(CompletionSignal, ACompletionBetweenLookingAndWaitingIsNotLost) {
  for (int round = 0; round < 200; ++round) {
    auto signal = std::make_shared<CompletionSignal>();
    auto request = std::make_shared<Request>("raced");
    request->signalOnCompletion(signal);
    std::thread completer([&] { request->complete(Status::ok()); });
    for (;;) {
      const uint64_t seen = signal->generation();
      if (request->test()) break;
      ASSERT_TRUE(signal->waitPast(seen, Deadline::after(std::chrono::seconds(10)))) << "round " << round;
    }
    completer.join();
  }
}

}  // namespace
}  // namespace poseidon::transport
