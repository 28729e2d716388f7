#include "ps/checkpoint/checkpointer.h"

#include "ps/checkpoint/checkpoint_names.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <cstring>
#include <vector>

namespace poseidon::ps {

Checkpointer::Checkpointer(std::string dir, CheckpointIdentity identity, const Shard& shard, uint64_t every, int keep,
                           uint64_t start_clock,
                           std::function<void(uint64_t clock, CheckpointMiss, const Status&)> on_miss,
                           WriteCheckpointFunction write)
    : on_miss_(std::move(on_miss)),
      write_(write ? std::move(write) : WriteCheckpointFunction(writeCheckpoint)),
      dir_(std::move(dir)),
      identity_(std::move(identity)),
      shard_(shard),
      every_(every),
      keep_(keep),
      start_clock_(start_clock),
      highest_version_(start_clock) {
  if (const size_t stale = removeStaleTemporaries(dir_, identity_.server); stale > 0) {
    spdlog::info("server {}: removed {} unfinished checkpoint file(s) of earlier runs from {}", identity_.server, stale,
                 dir_);
  }
  writer_ = std::thread([this] { writerLoop(); });
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void Checkpointer::request(uint64_t clock) {
  std::lock_guard lock(mutex_);
  requested_.insert(std::max(clock, highest_version_ + 1));
}

bool Checkpointer::dueLocked(uint64_t version) const {
  if (version <= start_clock_) return false;
  return (every_ > 0 && version % every_ == 0) || requested_.count(version) > 0;
}

void Checkpointer::onVersion(uint32_t chunk, uint64_t version, uint64_t steps, std::span<const uint64_t> applied,
                             const float* params, const float* state0, const float* state1) {
  Snapshot* snapshot = nullptr;
  {
    std::lock_guard lock(mutex_);
    highest_version_ = std::max(highest_version_, version);
    if (!dueLocked(version)) return;
    auto& slot = collecting_[version];
    if (!slot) {
      slot = std::make_unique<Snapshot>();
      slot->clock = version;
      slot->missing = static_cast<uint32_t>(shard_.chunks.size());
      slot->skipped = complete_.size() + (writing_ ? 1 : 0) >= kMaxSnapshotsAwaitingDisk;
      if (!slot->skipped) {
        // Allocated per checkpoint, not per iteration: checkpoints are rare next to updates.
        const size_t elements = shard_.bytes / sizeof(float);
        slot->params.resize(elements);
        if (identity_.state_words >= 1) slot->state0.resize(elements);
        if (identity_.state_words >= 2) slot->state1.resize(elements);
        slot->steps.resize(shard_.chunks.size());
        slot->applied.resize(shard_.chunks.size() * identity_.workers);
      }
    }
    if (slot->skipped) {
      if (--slot->missing == 0) {
        collecting_.erase(version);
        requested_.erase(version);
        skipped_.push_back(version);
        cv_.notify_all();
      }
      return;
    }
    snapshot = slot.get();
  }
  // Chunks copy into disjoint parts of the snapshot, so only the bookkeeping needs the lock.
  const ShardChunk& where = shard_.chunks[chunk];
  const size_t first = where.offset / sizeof(float);
  std::memcpy(snapshot->params.data() + first, params, where.bytes);
  if (state0 != nullptr && !snapshot->state0.empty()) std::memcpy(snapshot->state0.data() + first, state0, where.bytes);
  if (state1 != nullptr && !snapshot->state1.empty()) std::memcpy(snapshot->state1.data() + first, state1, where.bytes);
  snapshot->steps[chunk] = steps;
  std::copy(applied.begin(), applied.end(),
            snapshot->applied.begin() + static_cast<ptrdiff_t>(chunk) * identity_.workers);

  std::lock_guard lock(mutex_);
  if (--snapshot->missing > 0) return;
  auto node = collecting_.extract(version);
  requested_.erase(version);
  complete_.push_back(std::move(node.mapped()));
  cv_.notify_all();
}

void Checkpointer::writerLoop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !complete_.empty() || !skipped_.empty(); });
    if (!skipped_.empty()) {
      // Said once for all skipped since the last time: while the disk is behind, checkpoints
      // may be skipped at every clock.
      const std::vector<uint64_t> clocks(skipped_.begin(), skipped_.end());
      skipped_.clear();
      lock.unlock();
      const Status skipped = makeStatus(
          StatusCode::kUnavailable,
          "{} checkpoint(s) skipped, the newest at clock {}: the ones before were still being written to {} (the "
          "disk is slower than checkpoints come; the next one due after it catches up is taken)",
          clocks.size(), clocks.back(), dir_);
      spdlog::warn("server {}: {}", identity_.server, skipped.message());
      if (on_miss_) on_miss_(clocks.back(), CheckpointMiss::kSkippedBehind, skipped);
      lock.lock();
      continue;
    }
    if (complete_.empty()) return;  // stopping with nothing left to write
    std::unique_ptr<Snapshot> snapshot = std::move(complete_.front());
    complete_.pop_front();
    writing_ = true;
    lock.unlock();
    CheckpointData data;
    data.clock = snapshot->clock;
    data.chunk_steps = std::move(snapshot->steps);
    data.applied = std::move(snapshot->applied);
    data.params = snapshot->params;
    data.state0 = snapshot->state0;
    data.state1 = snapshot->state1;
    Status status = write_(dir_, identity_, data, keep_);
    if (!status.isOk()) {
      spdlog::error("server {}: checkpoint at clock {}: {}", identity_.server, data.clock, status.toString());
      if (on_miss_) on_miss_(data.clock, CheckpointMiss::kWriteFailed, status);
    }
    lock.lock();
    writing_ = false;
    if (status.isOk()) {
      last_written_ = std::max(last_written_, data.clock);
    } else if (first_error_.isOk()) {
      first_error_ = status;
    }
    cv_.notify_all();
  }
}

Status Checkpointer::flush() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return complete_.empty() && !writing_; });
  return first_error_;
}

uint64_t Checkpointer::lastWritten() const {
  std::lock_guard lock(mutex_);
  return last_written_;
}

}  // namespace poseidon::ps
