#include "trainer/timeline/recorder.h"

#include <algorithm>

namespace poseidon::trainer::timeline {

struct Recorder::Slot {
  Interval interval;
  std::atomic<bool> ready{false};  // set with release once `interval` is written
};

// Aligned to a cache line so that threads recording on neighbouring lanes do not share one.
struct alignas(64) Recorder::Lane {
  std::string name;
  std::unique_ptr<Slot[]> slots;
  size_t capacity = 0;
  std::atomic<uint64_t> reserved{0};  // slots handed out, including those past capacity
  std::atomic<uint64_t> dropped{0};
};

Recorder::Recorder(RecorderOptions options)
    : options_(std::move(options)), lanes_(std::make_unique<Lane[]>(options_.max_lanes)) {
  if (options_.process.empty()) options_.process = "worker " + std::to_string(options_.rank);
}

Recorder::~Recorder() = default;

Result<LaneId> Recorder::addLane(const std::string& name) {
  std::lock_guard<std::mutex> lock(setup_mutex_);
  const uint32_t count = lane_count_.load(std::memory_order_relaxed);
  for (uint32_t i = 0; i < count; ++i) {
    if (lanes_[i].name == name) {
      return makeStatus(StatusCode::kInvalidArgument, "timeline lane \"{}\" added twice, expected unique names", name);
    }
  }
  if (count >= options_.max_lanes) {
    return makeStatus(StatusCode::kInvalidArgument, "timeline lane \"{}\": {} lanes already, the most is {}", name,
                      count, options_.max_lanes);
  }
  Lane& lane = lanes_[count];
  lane.name = name;
  lane.slots = std::make_unique<Slot[]>(options_.events_per_lane);
  lane.capacity = options_.events_per_lane;
  lane_count_.store(count + 1, std::memory_order_release);
  return count;
}

NameId Recorder::internName(std::string_view name) {
  std::lock_guard<std::mutex> lock(setup_mutex_);
  auto found = std::find(names_.begin(), names_.end(), name);
  if (found != names_.end()) return static_cast<NameId>(found - names_.begin());
  names_.emplace_back(name);
  return static_cast<NameId>(names_.size() - 1);
}

bool Recorder::record(LaneId lane_id, NameId name, Category category, int64_t start_ns, int64_t end_ns,
                      int64_t iteration) {
  if (lane_id >= lane_count_.load(std::memory_order_acquire)) return false;
  Lane& lane = lanes_[lane_id];
  const uint64_t index = lane.reserved.fetch_add(1, std::memory_order_relaxed);
  if (index >= lane.capacity) {
    lane.dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  Slot& slot = lane.slots[index];
  slot.interval = Interval{lane_id, name, category, start_ns, end_ns, iteration};
  slot.ready.store(true, std::memory_order_release);
  return true;
}

Trace Recorder::snapshot() const {
  Trace trace;
  trace.rank = options_.rank;
  trace.process = options_.process;
  std::lock_guard<std::mutex> lock(setup_mutex_);
  trace.names = names_;
  const uint32_t count = lane_count_.load(std::memory_order_acquire);
  for (uint32_t l = 0; l < count; ++l) {
    const Lane& lane = lanes_[l];
    trace.lanes.push_back(lane.name);
    trace.dropped.push_back(lane.dropped.load(std::memory_order_relaxed));
    const uint64_t used = std::min<uint64_t>(lane.reserved.load(std::memory_order_acquire), lane.capacity);
    for (uint64_t i = 0; i < used; ++i) {
      if (lane.slots[i].ready.load(std::memory_order_acquire)) trace.intervals.push_back(lane.slots[i].interval);
    }
  }
  return trace;
}

uint64_t Recorder::dropped() const {
  uint64_t total = 0;
  const uint32_t count = lane_count_.load(std::memory_order_acquire);
  for (uint32_t l = 0; l < count; ++l) total += lanes_[l].dropped.load(std::memory_order_relaxed);
  return total;
}

}  // namespace poseidon::trainer::timeline
