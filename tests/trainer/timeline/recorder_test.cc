// The Recorder: intervals kept as recorded, a full lane counting what it drops instead of
// allocating, several threads recording at once (on their own lanes and on a shared one), a
// snapshot taken while they record, and the cost of one event.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/sanitizers.h"
#include "trainer/timeline/recorder.h"

namespace poseidon::trainer::timeline {
namespace {

LaneId lane(Recorder& recorder, const std::string& name) {
  Result<LaneId> id = recorder.addLane(name);
  EXPECT_TRUE(id) << id.status().toString();
  return id ? *id : 0;
}

TEST(Recorder, KeepsIntervalsAndNames) {
  Recorder recorder({.rank = 2});
  const LaneId compute = lane(recorder, "compute");
  const LaneId sync = lane(recorder, "sync-0");
  const NameId conv1 = recorder.internName("conv1");
  EXPECT_EQ(recorder.internName("fc1"), conv1 + 1);
  EXPECT_EQ(recorder.internName("conv1"), conv1);
  EXPECT_TRUE(recorder.record(compute, conv1, Category::kBackward, 100, 250, 7));
  EXPECT_TRUE(recorder.record(sync, conv1, Category::kSync, 200, 400));
  { ScopedInterval scoped(recorder, compute, conv1, Category::kForward); }
  const Trace trace = recorder.snapshot();
  EXPECT_EQ(trace.rank, 2);
  EXPECT_EQ(trace.process, "worker 2");
  EXPECT_EQ(trace.lanes, (std::vector<std::string>{"compute", "sync-0"}));
  ASSERT_EQ(trace.intervals.size(), 3u);
  EXPECT_EQ(trace.intervals[0].start_ns, 100);
  EXPECT_EQ(trace.intervals[0].end_ns, 250);
  EXPECT_EQ(trace.intervals[0].iteration, 7);
  EXPECT_EQ(trace.nameOf(trace.intervals[0]), "conv1");
  EXPECT_EQ(trace.intervals[1].category, Category::kForward);
  EXPECT_LE(trace.intervals[1].start_ns, trace.intervals[1].end_ns);
  EXPECT_EQ(trace.intervals[2].lane, sync);
  EXPECT_EQ(trace.droppedTotal(), 0u);
}

TEST(Recorder, LaneSetupErrors) {
  Recorder recorder({.max_lanes = 2});
  lane(recorder, "a");
  const Result<LaneId> twice = recorder.addLane("a");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.status().message().find("\"a\" added twice"), std::string::npos);
  lane(recorder, "b");
  const Result<LaneId> third = recorder.addLane("c");
  ASSERT_FALSE(third);
  EXPECT_NE(third.status().message().find("2 lanes already, the most is 2"), std::string::npos);
  EXPECT_FALSE(recorder.record(7, 0, Category::kWait, 0, 1));  // unknown lane: refused, no crash
}

TEST(Recorder, FullLaneCountsDroppedEvents) {
  Recorder recorder({.events_per_lane = 10});
  const LaneId compute = lane(recorder, "compute");
  const LaneId sync = lane(recorder, "sync-0");
  int kept = 0;
  for (int i = 0; i < 25; ++i) kept += recorder.record(compute, 0, Category::kForward, i, i + 1) ? 1 : 0;
  EXPECT_EQ(kept, 10);
  EXPECT_TRUE(recorder.record(sync, 0, Category::kSync, 0, 1));  // another lane still has room
  EXPECT_EQ(recorder.dropped(), 15u);
  const Trace trace = recorder.snapshot();
  EXPECT_EQ(trace.intervals.size(), 11u);
  EXPECT_EQ(trace.dropped, (std::vector<uint64_t>{15, 0}));
  EXPECT_EQ(trace.intervals[9].start_ns, 9);  // the first ten are kept, the later ones dropped
}

TEST(Recorder, SeveralThreadsRecordAtOnce) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  Recorder recorder({.events_per_lane = kThreads * kPerThread});  // the shared lane takes them all
  std::vector<LaneId> lanes;
  for (int t = 0; t < kThreads; ++t) lanes.push_back(lane(recorder, "sync-" + std::to_string(t)));
  const LaneId shared = lane(recorder, "shared");
  std::atomic<bool> go{false};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < kPerThread; ++i) {
        recorder.record(lanes[t], static_cast<NameId>(t), Category::kSync, i, i + t + 1, i);
        recorder.record(shared, static_cast<NameId>(t), Category::kWait, i, i + 1, t);
      }
    });
  }
  // A snapshot while they record sees only whole events.
  std::thread reader([&] {
    while (!done.load()) {
      for (const Interval& interval : recorder.snapshot().intervals) {
        if (interval.category == Category::kSync) {
          ASSERT_EQ(interval.end_ns - interval.start_ns, interval.name + 1);
        }
      }
    }
  });
  go = true;
  for (std::thread& thread : threads) thread.join();
  done = true;
  reader.join();
  const Trace trace = recorder.snapshot();
  EXPECT_EQ(trace.droppedTotal(), 0u);
  ASSERT_EQ(trace.intervals.size(), size_t{kThreads} * kPerThread * 2);
  std::vector<std::vector<int64_t>> per_lane(kThreads + 1);
  for (const Interval& interval : trace.intervals) {
    per_lane[interval.lane].push_back(interval.lane == shared ? interval.iteration : interval.start_ns);
  }
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(per_lane[t].size(), size_t{kPerThread});
    EXPECT_TRUE(std::is_sorted(per_lane[t].begin(), per_lane[t].end()));  // one writer: recording order
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(std::count(per_lane[shared].begin(), per_lane[shared].end(), t), kPerThread) << "thread " << t;
  }
}

// Not a pass/fail bound on a shared machine, but the figure the report quotes; it fails only if
// an event costs more than 2 us, which would mean a lock or an allocation crept in. Sanitizer
// builds instrument every access (TSan measured 2.5 us): the bound is for what ships.
#if POSEIDON_UNDER_TSAN || POSEIDON_UNDER_ASAN
constexpr double kMaxNsPerEvent = 20000.0;
#else
constexpr double kMaxNsPerEvent = 2000.0;
#endif

TEST(Recorder, CostPerEvent) {
  constexpr int kEvents = 1 << 20;
  for (int threads : {1, 2}) {
    Recorder recorder({.events_per_lane = kEvents});
    std::vector<LaneId> lanes;
    for (int t = 0; t < threads; ++t) lanes.push_back(lane(recorder, "lane-" + std::to_string(t)));
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        for (int i = 0; i < kEvents; ++i) recorder.record(lanes[t], 0, Category::kForward, i, i + 1);
      });
    }
    for (std::thread& worker : workers) worker.join();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    const double per_event = ns / kEvents;  // per event per thread (threads run side by side)
    std::printf("record(): %.1f ns per event with %d thread(s) on their own lanes\n", per_event, threads);
    EXPECT_LT(per_event, kMaxNsPerEvent);
    EXPECT_EQ(recorder.snapshot().intervals.size(), size_t{kEvents} * threads);
  }
}

}  // namespace
}  // namespace poseidon::trainer::timeline
