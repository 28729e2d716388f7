// Recorder: intervals from several threads at once, with no allocation and no lock per event.
//
// Set-up (allocating, under a lock): addLane() gives each recording thread its lane with a buffer
// of a fixed capacity; internName() gives each layer name an id. The hot path, record(), reserves
// a slot with one atomic increment on the lane, fills it and publishes it with a release store;
// several threads may share a lane. When a lane is full the event is counted as dropped, never
// allocated for, and the trace says how many were lost. snapshot() may run while threads record:
// it copies the events already published.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "trainer/timeline/interval.h"

namespace poseidon::trainer::timeline {

struct RecorderOptions {
  int rank = 0;
  std::string process;               // the trace's process name; empty: "worker <rank>"
  size_t events_per_lane = 1 << 16;  // preallocated per lane (48 bytes each)
  size_t max_lanes = 32;
};

class Recorder {
 public:
  explicit Recorder(RecorderOptions options);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Set-up. Lane names are unique; more than max_lanes is an error.
  Result<LaneId> addLane(const std::string& name);
  // The id of a layer name, the same for the same name.
  NameId internName(std::string_view name);

  static int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Hot path: any thread, no allocation, no lock. False when the event was not kept: the lane is
  // full (counted as dropped) or the lane id is unknown.
  bool record(LaneId lane, NameId name, Category category, int64_t start_ns, int64_t end_ns, int64_t iteration = -1);

  Trace snapshot() const;
  uint64_t dropped() const;

 private:
  struct Slot;
  struct Lane;

  RecorderOptions options_;
  std::unique_ptr<Lane[]> lanes_;        // max_lanes of them, buffers allocated by addLane
  std::atomic<uint32_t> lane_count_{0};  // lanes_[0, lane_count_) are ready for record()
  mutable std::mutex setup_mutex_;       // addLane, internName, snapshot's copy of the names
  std::vector<std::string> names_;
};

// Records [construction, destruction) on a lane: a layer's forward pass, a wait.
class ScopedInterval {
 public:
  ScopedInterval(Recorder& recorder, LaneId lane, NameId name, Category category, int64_t iteration = -1)
      : recorder_(recorder),
        lane_(lane),
        name_(name),
        category_(category),
        iteration_(iteration),
        start_ns_(Recorder::nowNs()) {}
  ~ScopedInterval() { recorder_.record(lane_, name_, category_, start_ns_, Recorder::nowNs(), iteration_); }
  ScopedInterval(const ScopedInterval&) = delete;
  ScopedInterval& operator=(const ScopedInterval&) = delete;

 private:
  Recorder& recorder_;
  LaneId lane_;
  NameId name_;
  Category category_;
  int64_t iteration_;
  int64_t start_ns_;
};

}  // namespace poseidon::trainer::timeline
