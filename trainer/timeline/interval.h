// What a timeline holds: intervals on named lanes (a lane per thread), each naming a layer and a
// category, and the snapshot of them that the writers and queries read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace poseidon::trainer::timeline {

enum class Category : uint8_t { kForward, kBackward, kSync, kWait, kOther };

// "forward", "backward", "sync", "wait", "other": the Chrome trace's "cat".
const char* categoryName(Category category);

using LaneId = uint32_t;  // index into Trace::lanes
using NameId = uint32_t;  // index into Trace::names

// One interval, in steady-clock nanoseconds (std::chrono::steady_clock: CLOCK_MONOTONIC on Linux,
// so the processes of one machine share it and their traces line up).
struct Interval {
  LaneId lane = 0;
  NameId name = 0;
  Category category = Category::kOther;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t iteration = -1;  // -1: none
};

// A recorder's contents, copied out.
struct Trace {
  int rank = 0;
  std::string process;              // "worker 2"
  std::vector<std::string> lanes;   // by LaneId: "compute", "sync-0", ...
  std::vector<std::string> names;   // by NameId: layer names
  std::vector<Interval> intervals;  // lane by lane, each in recording order
  std::vector<uint64_t> dropped;    // by LaneId: events lost because the lane was full

  // The interval's layer name; "?" for an id the recorder never gave out.
  const std::string& nameOf(const Interval& interval) const;
  uint64_t droppedTotal() const;
};

}  // namespace poseidon::trainer::timeline
