#include "ps/checkpoint/checkpointer.h"

#include "ps/checkpoint/checkpoint_names.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

namespace poseidon::ps {

Checkpointer::Checkpointer(std::string dir, CheckpointIdentity identity, const Shard& shard, uint64_t every, int keep,
                           uint64_t start_clock, CheckpointerHooks hooks)
    : hooks_(std::move(hooks)),
      write_(hooks_.write ? hooks_.write : WriteCheckpointFunction(writeCheckpoint)),
      dir_(std::move(dir)),
      identity_(std::move(identity)),
      shard_(shard),
      every_(every),
      keep_(keep),
      start_clock_(start_clock),
      highest_version_(start_clock),
      committed_(start_clock) {
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
      const std::optional<CheckpointMiss> skip = skipReasonLocked();
      slot->skipped = skip.has_value();
      if (skip) slot->skip_reason = *skip;
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
        (slot->skip_reason == CheckpointMiss::kSkippedAwaiting ? skipped_awaiting_ : skipped_behind_)
            .push_back(version);
        collecting_.erase(version);
        requested_.erase(version);
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

std::optional<CheckpointMiss> Checkpointer::skipReasonLocked() const {
  const size_t awaiting_disk = complete_.size() + (writing_ ? 1 : 0);
  if (awaiting_disk >= kMaxSnapshotsAwaitingDisk) return CheckpointMiss::kSkippedBehind;
  // Files newer than the committed clock, and snapshots on their way to be such files.
  const size_t uncommitted = static_cast<size_t>(std::distance(written_.upper_bound(committed_), written_.end()));
  if (uncommitted + awaiting_disk >= static_cast<size_t>(keep_)) return CheckpointMiss::kSkippedAwaiting;
  return std::nullopt;
}

void Checkpointer::reportSkippedLocked(std::unique_lock<std::mutex>& lock, std::vector<uint64_t>& clocks,
                                       CheckpointMiss why) {
  // Said once for all skipped since the last time: while the disk is behind, checkpoints may be
  // skipped at every clock.
  const std::vector<uint64_t> said = std::exchange(clocks, {});
  const uint64_t committed = committed_;
  busy_ = true;
  lock.unlock();
  const std::string cause =
      why == CheckpointMiss::kSkippedBehind
          ? fmt::format(
                "the ones before were still being written to {} (the disk is slower than checkpoints come; "
                "the next one due after it catches up is taken)",
                dir_)
          : fmt::format(
                "{} newer than clock {} (the newest every server has written; 0: none yet) wait for another "
                "server's file of their clock (checkpoint_keep {}; a server's disk is behind or failing, its log "
                "says which)",
                keep_ == 1 ? "the one" : fmt::format("the {}", keep_), committed, keep_);
  const Status skipped = makeStatus(StatusCode::kUnavailable, "{} checkpoint(s) skipped, the newest at clock {}: {}",
                                    said.size(), said.back(), cause);
  spdlog::warn("server {}: {}", identity_.server, skipped.message());
  if (hooks_.on_miss) hooks_.on_miss(said.back(), why, skipped);
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::pruneLocked(std::unique_lock<std::mutex>& lock) {
  prune_due_ = false;
  busy_ = true;
  const uint64_t committed = committed_;
  lock.unlock();
  if (Status status = pruneCheckpoints(dir_, identity_.server, committed, keep_); !status.isOk()) {
    // The files are only kept longer; the next prune tries again.
    spdlog::warn("server {}: {}", identity_.server, status.toString());
  }
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::writerLoop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] {
      return stopping_ || !complete_.empty() || !skipped_behind_.empty() || !skipped_awaiting_.empty() || prune_due_;
    });
    if (!skipped_behind_.empty()) {
      reportSkippedLocked(lock, skipped_behind_, CheckpointMiss::kSkippedBehind);
      continue;
    }
    if (!skipped_awaiting_.empty()) {
      reportSkippedLocked(lock, skipped_awaiting_, CheckpointMiss::kSkippedAwaiting);
      continue;
    }
    if (prune_due_) {
      pruneLocked(lock);
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
    Status status = write_(dir_, identity_, data);
    if (!status.isOk()) {
      spdlog::error("server {}: checkpoint at clock {}: {}", identity_.server, data.clock, status.toString());
      if (hooks_.on_miss) hooks_.on_miss(data.clock, CheckpointMiss::kWriteFailed, status);
    }
    lock.lock();
    if (status.isOk()) {
      last_written_ = std::max(last_written_, data.clock);
      written_.insert(data.clock);
      // Files of earlier runs the committed clock has passed go too, as after a commit.
      prune_due_ = true;
    } else if (first_error_.isOk()) {
      first_error_ = status;
    }
    writing_ = false;
    if (status.isOk() && hooks_.on_written) {
      // After it is in written_, so a commit it leads to finds it; before flush() may return.
      busy_ = true;
      lock.unlock();
      hooks_.on_written(data.clock);
      lock.lock();
      busy_ = false;
    }
    cv_.notify_all();
  }
}

bool Checkpointer::commit(uint64_t clock) {
  std::lock_guard lock(mutex_);
  if (clock <= committed_) return true;
  if (!written_.contains(clock)) return false;
  committed_ = clock;
  written_.erase(written_.begin(), written_.find(clock));
  prune_due_ = true;
  cv_.notify_all();
  return true;
}

Status Checkpointer::flush() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] {
    return complete_.empty() && !writing_ && skipped_behind_.empty() && skipped_awaiting_.empty() && !prune_due_ &&
           !busy_;
  });
  return first_error_;
}

uint64_t Checkpointer::lastWritten() const {
  std::lock_guard lock(mutex_);
  return last_written_;
}

}  // namespace poseidon::ps
