// TrainTimeline: one worker's Chrome-trace timeline of a training run (trainer/timeline), for
// the first `steps` iterations.
//
// Lanes: "compute" (the trainer's thread): each parametric layer's forward and backward, and the
// waits for its parameters. The Network only calls out at its hooks, so the intervals are cut
// there: layer l's forward runs from its parameters being ready to layer l+1's wait (so it holds
// the unparametric layers after l: ReLU, pooling; the last one holds the loss), layer l's
// backward from layer l+1's gradient report to its own. A sync lane per layer and scheme,
// "sync fc1 (SFB)", made when that layer first syncs by that scheme (HybComm may move a layer
// between schemes), fed from SessionOptions::on_sync on the library's thread: "wait" from the
// layer's report to its start on the network (queued behind earlier syncs), "sync" from its start
// to its parameters being updated. A layer is reported again only once its last sync completed,
// so a lane's intervals never overlap (several layers' syncs do, on their own lanes).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheme/scheme.h"
#include "trainer/reference/network_session.h"
#include "trainer/timeline/recorder.h"
#include "trainer/wfbp/pipeline.h"

namespace poseidon::tools {

class TrainTimeline {
 public:
  // `layers`: the parametric layers' names, input to output.
  static Result<std::unique_ptr<TrainTimeline>> create(int rank, const std::vector<std::string>& layers,
                                                       uint64_t steps);

  // The trainer's thread, around its calls of one iteration.
  void beginIteration(uint64_t iteration);
  void endForward();     // forward() returned
  void beginBackward();  // backward() is called
  // The hooks' observer (sessionHooks).
  void observe(trainer::reference::HookPhase phase, size_t layer);

  // The library's thread (SessionOptions::on_sync).
  void onSync(const trainer::SyncRecord& record);

  Status write(const std::string& path) const;
  // Of the recorded syncs' time on the network (start to completion), the fraction during which
  // this worker's backward pass of the layers below was computing: what wait-free backpropagation
  // hides ([Poseidon 2015] Algorithm 2). 0 when nothing was recorded.
  Result<double> syncOverlapWithBackward() const;

 private:
  explicit TrainTimeline(int rank, uint64_t steps);
  bool recording() const { return iteration_ < steps_; }
  void closeOpen(int64_t now);

  trainer::timeline::Recorder recorder_;
  uint64_t steps_;
  trainer::timeline::LaneId compute_ = 0;
  std::vector<std::string> layer_names_;
  std::vector<trainer::timeline::NameId> names_;  // by parametric layer
  // [layer][scheme]: the lane, once made (the library's thread only); -1 before.
  std::vector<std::array<int64_t, 4>> sync_;

  // The trainer thread's open interval: a layer's forward or backward since `open_since_`.
  uint64_t iteration_ = 0;
  int64_t open_since_ = 0;
  size_t open_layer_ = 0;
  trainer::timeline::Category open_category_ = trainer::timeline::Category::kOther;
  bool open_ = false;
  int64_t wait_since_ = 0;
};

}  // namespace poseidon::tools
