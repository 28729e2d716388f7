#include "trainer/wfbp/pipeline.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/deadline_wait.h"

namespace poseidon::trainer {

namespace {

// How long a pipeline thread waits on a sync before it looks whether the pipeline stops.
constexpr auto kStopPoll = std::chrono::milliseconds(100);

// dst (cols x rows) = src (rows x cols)^T, in tiles so both sides stay in cache.
void transpose(const float* src, size_t rows, size_t cols, float* dst) {
  constexpr size_t kTile = 32;
  for (size_t i0 = 0; i0 < rows; i0 += kTile) {
    const size_t i1 = std::min(rows, i0 + kTile);
    for (size_t j0 = 0; j0 < cols; j0 += kTile) {
      const size_t j1 = std::min(cols, j0 + kTile);
      for (size_t i = i0; i < i1; ++i) {
        for (size_t j = j0; j < j1; ++j) dst[j * rows + i] = src[i * cols + j];
      }
    }
  }
}

}  // namespace

WfbpPipeline::WfbpPipeline(LayerSync& sync, SyncUnits units, std::vector<LayerSource> sources, PipelineOptions options,
                           uint64_t first_iteration)
    : sync_(sync),
      units_(std::move(units)),
      sources_(std::move(sources)),
      options_(std::move(options)),
      first_iteration_(first_iteration),
      layers_(units_.layerCount()),
      unit_copied_(units_.unitCount(), 0),
      completed_reported_at_(units_.layerCount()),
      ready_(2 * units_.layerCount()),
      started_(2 * units_.unitCount()) {
  starter_ = std::thread([this] { runStarter(); });
  completer_ = std::thread([this] { runCompleter(); });
}

WfbpPipeline::~WfbpPipeline() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  starter_wake_.notify_all();
  completions_->notify();
  starter_.join();
  completer_.join();
}

uint64_t WfbpPipeline::iteration() const {
  std::lock_guard lock(mutex_);
  return first_iteration_ + trainer_iteration_;
}

void WfbpPipeline::fail(Status status) {
  if (failure_.isOk()) failure_ = std::move(status);
}

Status WfbpPipeline::gradientReady(size_t layer) {
  std::unique_lock lock(mutex_);
  if (!failure_.isOk()) return failure_;
  if (layer >= layers_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "gradient ready for layer {}: there are {} layers (0..{})", layer,
                      layers_.size(), layers_.size() - 1);
  }
  LayerState& state = layers_[layer];
  const std::string& name = units_.layers().layers()[layer].name();
  if (state.reported > trainer_iteration_) {
    return makeStatus(StatusCode::kInvalidArgument, "layer '{}' reported its gradient twice in iteration {}", name,
                      first_iteration_ + trainer_iteration_);
  }
  if (state.reported > state.waited) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "layer '{}' reported its gradient of iteration {} before waiting for the parameters of its last "
                      "sync (call waitForParameters before its forward pass)",
                      name, first_iteration_ + trainer_iteration_);
  }
  if (options_.staging != nullptr) {
    // Queued behind the backward step on the trainer's stream; the starter waits for it.
    Status queued = options_.staging->gradientToHost(layer);
    if (!queued.isOk()) return queued.withContext(fmt::format("copying layer '{}' to the host", name));
  }
  ++state.reported;
  state.reported_at = Clock::now();
  ready_[(ready_head_ + ready_count_) % ready_.size()] = Ready{layer, trainer_iteration_};
  ++ready_count_;
  // Woken after the lock is released, and only the starter: the trainer's thread must not be
  // pre-empted here by a thread that would first block on the lock it still holds.
  lock.unlock();
  starter_wake_.notify_one();
  return Status::ok();
}

Status WfbpPipeline::waitForParameters(size_t layer, Deadline deadline) {
  std::unique_lock lock(mutex_);
  if (layer >= layers_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "waiting for the parameters of layer {}: there are {} layers",
                      layer, layers_.size());
  }
  LayerState& state = layers_[layer];
  const std::string& name = units_.layers().layers()[layer].name();
  // Nothing outstanding (the initial parameters, or a sync already waited for): they are current.
  if (state.waited == state.reported) return failure_;
  const bool done =
      waitWithDeadline(changed_, lock, deadline, [&] { return !failure_.isOk() || state.completed >= state.reported; });
  if (!failure_.isOk()) return failure_;
  if (!done) {
    return makeStatus(StatusCode::kTimeout,
                      "waiting for the parameters of layer '{}' (its sync of iteration {}): "
                      "not updated by the deadline",
                      name, first_iteration_ + state.reported - 1);
  }
  state.waited = state.reported;
  lock.unlock();
  // A device layer: the trainer's next work on its stream waits for the parameters' copy.
  if (options_.staging != nullptr) {
    Status ordered = options_.staging->orderComputeAfterParams(layer);
    if (!ordered.isOk()) return ordered.withContext(fmt::format("copying layer '{}' to the device", name));
  }
  return Status::ok();
}

Status WfbpPipeline::endIteration() {
  std::lock_guard lock(mutex_);
  if (!failure_.isOk()) return failure_;
  std::string missing;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (layers_[l].reported > trainer_iteration_) continue;
    if (!missing.empty()) missing += ", ";
    missing += fmt::format("'{}'", units_.layers().layers()[l].name());
  }
  if (!missing.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "ending iteration {}: every layer reports its gradient once per iteration; not reported: {}",
                      first_iteration_ + trainer_iteration_, missing);
  }
  ++trainer_iteration_;
  return Status::ok();
}

bool WfbpPipeline::anyReported() const {
  std::lock_guard lock(mutex_);
  for (const LayerState& state : layers_) {
    if (state.reported > 0) return true;
  }
  return false;
}

Status WfbpPipeline::drain(Deadline deadline) {
  std::unique_lock lock(mutex_);
  uint64_t reported = 0;
  for (const LayerState& state : layers_) reported = std::max(reported, state.reported);
  const bool done =
      waitWithDeadline(changed_, lock, deadline, [&] { return !failure_.isOk() || closed_iterations_ >= reported; });
  if (!failure_.isOk()) return failure_;
  if (!done) {
    return makeStatus(StatusCode::kTimeout, "draining the pipeline: {} of {} iterations closed by the deadline",
                      closed_iterations_, reported);
  }
  return Status::ok();
}

Status WfbpPipeline::copyIn(size_t layer) {
  const LayerSource& source = sources_[layer];
  const model::Layer& shape = units_.layers().layers()[layer];
  const size_t unit = units_.unitOf(layer);
  if (shape.isFullyConnected()) {
    const auto m = static_cast<size_t>(shape.fc().rows), n = static_cast<size_t>(shape.fc().cols);
    std::span<float> u = sync_.u(unit), v = sync_.v(unit);  // an FC layer is a unit alone
    const size_t k = u.size() / m;
    if (source.feature_major) {
      std::copy_n(source.output_gradient, u.size(), u.data());
      std::copy_n(source.input, v.size(), v.data());
    } else {
      transpose(source.output_gradient, k, m, u.data());  // dY (K x M) -> U (M x K)
      transpose(source.input, k, n, v.data());            // X (K x N) -> V (N x K)
    }
    return Status::ok();
  }
  std::span<float> gradient = sync_.gradient(unit).subspan(units_.offsetInUnit(layer), units_.floats(layer));
  std::copy_n(source.gradient, gradient.size(), gradient.data());
  return Status::ok();
}

void WfbpPipeline::runStarter() {
  for (;;) {
    Ready next;
    Clock::time_point reported_at;
    {
      std::unique_lock lock(mutex_);
      // A layer of the next iteration waits until this one is closed on the sync.
      starter_wake_.wait(lock, [&] {
        return stopping_ || !failure_.isOk() ||
               (ready_count_ > 0 && ready_[ready_head_].iteration <= closed_iterations_);
      });
      if (stopping_ || !failure_.isOk()) return;
      next = ready_[ready_head_];
      ready_head_ = (ready_head_ + 1) % ready_.size();
      --ready_count_;
      reported_at = layers_[next.layer].reported_at;
    }
    const Deadline deadline(reported_at + options_.sync_timeout);
    Status copied = options_.staging != nullptr ? options_.staging->waitGradient(next.layer, deadline) : Status::ok();
    if (copied.isOk()) copied = copyIn(next.layer);
    if (!copied.isOk()) {
      // The layer's sync never starts: the pipeline fails here, naming it, and the starter stops
      // (a merged unit's other members must not queue it again). Waits return the failure.
      {
        std::lock_guard lock(mutex_);
        fail(copied.withContext(
            fmt::format("copying the gradient of layer '{}'", units_.layers().layers()[next.layer].name())));
      }
      changed_.notify_all();
      return;
    }
    // A merged unit starts once its last member is in (MG-WFBP: one message for the run).
    const size_t unit = units_.unitOf(next.layer);
    if (++unit_copied_[unit] < units_.memberCount(unit)) continue;
    unit_copied_[unit] = 0;
    transport::RequestPtr request;
    const Clock::time_point started = Clock::now();
    {
      std::lock_guard sync_lock(sync_mutex_);
      request = sync_.startLayer(unit, deadline);
    }
    request->signalOnCompletion(completions_);
    {
      std::lock_guard lock(mutex_);
      started_[(started_head_ + started_count_) % started_.size()] =
          Started{unit, next.iteration, std::move(request), reported_at, started};
      ++started_count_;
    }
    completions_->notify();
  }
}

Status WfbpPipeline::deliver(size_t unit) {
  // A merged unit's parameters live in the sync's own memory: each member's part goes to the
  // trainer's buffer (a unit of one layer syncs in place).
  if (units_.merged(unit)) units_.scatter(unit, sync_.params(unit), [this](size_t l) { return sources_[l].params; });
  // A device layer's update goes back before the layer counts as updated, so the trainer's wait
  // orders its stream after this copy.
  if (options_.staging == nullptr) return Status::ok();
  for (size_t l = units_.firstLayer(unit); l <= units_.lastLayer(unit); ++l) {
    Status queued = options_.staging->paramsToDevice(l);
    if (!queued.isOk()) return queued.withContext("copying the updated parameters to the device");
  }
  return Status::ok();
}

bool WfbpPipeline::takeFinished(Started& next) {
  for (size_t i = 0; i < started_count_; ++i) {
    Started& slot = started_[(started_head_ + i) % started_.size()];
    if (!slot.request || !slot.request->test()) continue;  // no request: collected already
    next = std::move(slot);                                // leaves the slot's request null
    break;
  }
  // Collected slots at the front are free again.
  while (started_count_ > 0 && !started_[started_head_].request) {
    started_head_ = (started_head_ + 1) % started_.size();
    --started_count_;
  }
  return next.request != nullptr;
}

void WfbpPipeline::runCompleter() {
  for (;;) {
    Started next;
    {
      // Read before looking (completion_signal.h): a sync that finishes after the look, a start
      // and a stop all move it on.
      const uint64_t seen = completions_->generation();
      std::unique_lock lock(mutex_);
      if (!takeFinished(next)) {
        // Syncs end by their own deadlines; a stopping pipeline does not wait for them (no peer
        // may finish them), and the sliced wait lets it look.
        if (stopping_) return;
        lock.unlock();
        (void)completions_->waitPast(seen, Deadline::after(kStopPoll));
        continue;
      }
    }
    const size_t unit = next.unit;
    Result<LayerSyncResult> result = LayerSyncResult{};
    {
      std::lock_guard sync_lock(sync_mutex_);
      result = sync_.waitLayer(unit, Deadline(Clock::now()));
    }
    if (result) {
      Status delivered = deliver(unit);
      if (!delivered.isOk()) result = std::move(delivered);
    }
    Status closed;
    bool last = false;
    bool failed = false;
    {
      std::lock_guard lock(mutex_);
      for (size_t l = units_.firstLayer(unit); l <= units_.lastLayer(unit); ++l) {
        // Read before the layer counts as completed: the trainer may report it again right after.
        completed_reported_at_[l] = layers_[l].reported_at;
        ++layers_[l].completed;
      }
      last = ++collected_in_iteration_ == units_.unitCount();
      if (!result) {
        // A start the sync refused never reached it: the request holds the cause.
        const Status& refused = next.request->status();
        fail(refused.isOk() ? result.status() : refused);
      }
      failed = !failure_.isOk() || stopping_;
    }
    // After a failure the iteration is not closed on the sync: that would wait for peers (the
    // replica check, HybComm's agreement) that will not answer, delaying the shutdown.
    if (last && !failed) {
      std::lock_guard sync_lock(sync_mutex_);
      closed = sync_.endIteration(Deadline::after(options_.sync_timeout));
    }
    {
      std::lock_guard lock(mutex_);
      if (last) {
        collected_in_iteration_ = 0;
        ++closed_iterations_;
        if (!closed.isOk())
          fail(closed.withContext(fmt::format("closing iteration {}", first_iteration_ + next.iteration)));
      }
    }
    changed_.notify_all();
    if (last || !result) starter_wake_.notify_one();  // the next iteration may start, or stop
    if (result && options_.on_sync) {
      // One record per member layer; a merged unit's bytes are shared out by the members' sizes
      // (the last member takes the rounding, so the records add up to what the sync moved).
      const uint64_t total = units_.unitModel().layers()[unit].params();
      uint64_t sent_left = result->bytes_sent, received_left = result->bytes_received;
      for (size_t l = units_.firstLayer(unit); l <= units_.lastLayer(unit); ++l) {
        const bool last_member = l == units_.lastLayer(unit);
        const auto share = [&](uint64_t bytes) {
          return static_cast<uint64_t>(static_cast<long double>(bytes) * units_.floats(l) / total);
        };
        const uint64_t sent = last_member ? sent_left : share(result->bytes_sent);
        const uint64_t received = last_member ? received_left : share(result->bytes_received);
        sent_left -= sent;
        received_left -= received;
        options_.on_sync(SyncRecord{l, first_iteration_ + next.iteration, result->scheme, completed_reported_at_[l],
                                    next.started, next.request->completedAt(), sent, received, result->version});
      }
    }
  }
}

}  // namespace poseidon::trainer
