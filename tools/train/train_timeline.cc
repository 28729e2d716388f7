#include "tools/train/train_timeline.h"

#include <fmt/format.h>

#include "trainer/timeline/chrome_trace.h"
#include "trainer/timeline/overlap.h"

namespace poseidon::tools {

using trainer::timeline::Category;
using trainer::timeline::Recorder;

namespace {

// Per iteration and layer the compute lane holds a wait, a forward and a backward (a sync lane
// just a wait and a sync, so the same size fits it).
constexpr size_t kComputeEventsPerLayer = 3;
constexpr size_t kMaxLayers = 8;
constexpr size_t kSchemeCount = 4;
constexpr size_t kMaxEventsPerLane = size_t{1} << 22;  // 192 MiB of lane at most

}  // namespace

TrainTimeline::TrainTimeline(int rank, uint64_t steps)
    : recorder_({rank, fmt::format("worker {}", rank),
                 static_cast<size_t>(std::min<uint64_t>(
                     std::max<uint64_t>(steps, 1) * kMaxLayers * kComputeEventsPerLayer, kMaxEventsPerLane)),
                 1 + kMaxLayers * kSchemeCount}),
      steps_(steps) {}

Result<std::unique_ptr<TrainTimeline>> TrainTimeline::create(int rank, const std::vector<std::string>& layers,
                                                             uint64_t steps) {
  if (layers.size() > kMaxLayers) {
    return makeStatus(StatusCode::kInvalidArgument, "the timeline is sized for {} layers, the network has {}",
                      kMaxLayers, layers.size());
  }
  std::unique_ptr<TrainTimeline> self(new TrainTimeline(rank, steps));
  auto compute = self->recorder_.addLane("compute");
  if (!compute) return compute.status();
  self->compute_ = *compute;
  for (const std::string& name : layers) self->names_.push_back(self->recorder_.internName(name));
  self->layer_names_ = layers;
  self->sync_.assign(layers.size(), {-1, -1, -1, -1});
  return self;
}

void TrainTimeline::beginIteration(uint64_t iteration) {
  iteration_ = iteration;
  open_ = false;
}

void TrainTimeline::closeOpen(int64_t now) {
  if (!open_) return;
  open_ = false;
  if (recording()) {
    recorder_.record(compute_, names_[open_layer_], open_category_, open_since_, now, static_cast<int64_t>(iteration_));
  }
}

void TrainTimeline::endForward() { closeOpen(Recorder::nowNs()); }

void TrainTimeline::beginBackward() {
  open_ = !names_.empty();
  open_layer_ = names_.size() - 1;
  open_category_ = Category::kBackward;
  open_since_ = Recorder::nowNs();
}

void TrainTimeline::observe(trainer::reference::HookPhase phase, size_t layer) {
  if (layer >= names_.size()) return;
  const int64_t now = Recorder::nowNs();
  switch (phase) {
    case trainer::reference::HookPhase::kWaitBegin:
      closeOpen(now);  // the forward of the layer below
      wait_since_ = now;
      return;
    case trainer::reference::HookPhase::kWaitEnd:
      if (recording()) {
        recorder_.record(compute_, names_[layer], Category::kWait, wait_since_, now, static_cast<int64_t>(iteration_));
      }
      open_ = true;
      open_layer_ = layer;
      open_category_ = Category::kForward;
      open_since_ = now;
      return;
    case trainer::reference::HookPhase::kReady:
      closeOpen(now);  // this layer's backward
      if (layer > 0) {
        open_ = true;
        open_layer_ = layer - 1;
        open_category_ = Category::kBackward;
        open_since_ = now;
      }
      return;
  }
}

void TrainTimeline::onSync(const trainer::SyncRecord& record) {
  const auto s = static_cast<size_t>(record.scheme);
  if (record.iteration >= steps_ || record.layer >= names_.size() || s >= kSchemeCount) return;
  int64_t& lane = sync_[record.layer][s];
  if (lane < 0) {
    // Once per layer and scheme: addLane allocates, which the per-iteration path does not.
    auto made =
        recorder_.addLane(fmt::format("sync {} ({})", layer_names_[record.layer], scheme::schemeName(record.scheme)));
    if (!made) return;
    lane = *made;
  }
  const auto ns = [](Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  };
  const auto id = static_cast<trainer::timeline::LaneId>(lane);
  const auto iteration = static_cast<int64_t>(record.iteration);
  recorder_.record(id, names_[record.layer], Category::kWait, ns(record.reported), ns(record.started), iteration);
  recorder_.record(id, names_[record.layer], Category::kSync, ns(record.started), ns(record.completed), iteration);
}

Status TrainTimeline::write(const std::string& path) const {
  return trainer::timeline::writeChromeTrace(recorder_.snapshot(), path);
}

Result<double> TrainTimeline::syncOverlapWithBackward() const {
  auto overlaps = trainer::timeline::syncOverlapsWithBackwardBelow(recorder_.snapshot(), layer_names_);
  if (!overlaps) return overlaps.status();
  int64_t synced = 0, overlapped = 0;
  for (const trainer::timeline::SyncOverlap& o : *overlaps) {
    synced += o.sync.end_ns - o.sync.start_ns;
    overlapped += o.overlapped_ns;
  }
  return synced > 0 ? static_cast<double>(overlapped) / static_cast<double>(synced) : 0.0;
}

}  // namespace poseidon::tools
