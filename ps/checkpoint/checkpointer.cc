#include "ps/checkpoint/checkpointer.h"

#include "ps/checkpoint/checkpoint_names.h"
#include "ps/checkpoint/checkpoint_notice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <cstring>
#include <string>
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
      committed_(start_clock),
      passed_by_all_(start_clock),
      told_(start_clock) {
  if (const size_t stale = removeStaleTemporaries(dir_, identity_.server); stale > 0) {
    spdlog::info("server {}: removed {} unfinished checkpoint file(s) of earlier runs from {}", identity_.server, stale,
                 dir_);
  }
  if (start_clock_ > 0) {
    // Resumed: later files are a future no other server shares (else the job would resume there),
    // and one left beside this run's file of its clock on another disk would pass for common.
    if (const size_t later = removeCheckpointsAfter(dir_, identity_.server, start_clock_); later > 0) {
      spdlog::info("server {}: removed {} checkpoint(s) after clock {}, the one resumed from", identity_.server, later,
                   start_clock_);
    }
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

void Checkpointer::onPassedOver(uint64_t from, uint64_t to) {
  std::lock_guard lock(mutex_);
  // The due clocks in [from, to): multiples of `every` and requests, not every clock of the jump.
  std::set<uint64_t> clocks(requested_.lower_bound(from), requested_.lower_bound(to));
  if (every_ > 0 && from < to) {
    // The first multiple at or after `from`, stepping only while the next stays below `to`: no sum
    // can wrap, whatever `every` worker 0 asked for.
    const uint64_t gap = (every_ - from % every_) % every_;
    for (uint64_t clock = from + gap; gap < to - from && clock < to; clock += every_) {
      clocks.insert(clock);
      if (to - clock <= every_) break;
    }
  }
  for (uint64_t clock : clocks) {
    if (clock <= start_clock_) continue;
    auto& slot = collecting_[clock];
    if (!slot) {
      slot = std::make_unique<Snapshot>();
      slot->clock = clock;
      slot->missing = static_cast<uint32_t>(shard_.chunks.size());
    }
    if (!slot->skipped) {
      slot->skipped = true;
      slot->skip_reason = CheckpointMiss::kPassedOver;
      slot->params = {};  // the memory goes now, not when the last chunk passes
      slot->state0 = {};
      slot->state1 = {};
      slot->steps = {};
      slot->applied = {};
    }
    if (--slot->missing == 0) {
      skipped_.emplace_back(clock, slot->skip_reason);
      collecting_.erase(clock);
      requested_.erase(clock);
      cv_.notify_all();
    }
  }
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
      const std::optional<CheckpointMiss> skip = skipReasonLocked(version);
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
        skipped_.emplace_back(version, slot->skip_reason);
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

std::optional<CheckpointMiss> Checkpointer::skipReasonLocked(uint64_t version) const {
  const size_t awaiting_disk = complete_.size() + (writing_ ? 1 : 0);
  if (awaiting_disk >= kMaxSnapshotsAwaitingDisk) return CheckpointMiss::kSkippedBehind;
  // Undecided files, and snapshots on their way to be such files (under SSP several clocks may be
  // collecting at once).
  size_t coming = awaiting_disk;
  for (const auto& [clock, snapshot] : collecting_) {
    if (clock != version && snapshot && !snapshot->skipped) ++coming;
  }
  if (undecided_.size() + coming < static_cast<size_t>(keep_)) return std::nullopt;
  // Only this server's own snapshots fill `keep`: its own disk is what it waits for.
  return undecided_.empty() ? CheckpointMiss::kSkippedBehind : CheckpointMiss::kSkippedAwaiting;
}

void Checkpointer::reportSkippedLocked(std::unique_lock<std::mutex>& lock) {
  // Said once for all skipped since the last time (while the disk is behind, checkpoints may be
  // skipped at every clock), but in clock order: a snapshot waiting for the disk is told of first,
  // so only the skips before it go now.
  const auto first_later =
      complete_.empty() ? skipped_.end() : std::find_if(skipped_.begin(), skipped_.end(), [&](const auto& skip) {
        return skip.first > complete_.front()->clock;
      });
  const std::vector<std::pair<uint64_t, CheckpointMiss>> said(skipped_.begin(), first_later);
  skipped_.erase(skipped_.begin(), first_later);
  const auto [newest, why] = said.back();
  const size_t behind = static_cast<size_t>(std::count_if(
      said.begin(), said.end(), [](const auto& skip) { return skip.second == CheckpointMiss::kSkippedBehind; }));
  const size_t passed_over = static_cast<size_t>(std::count_if(
      said.begin(), said.end(), [](const auto& skip) { return skip.second == CheckpointMiss::kPassedOver; }));
  std::vector<std::string> causes;
  if (passed_over > 0) {
    causes.push_back(
        fmt::format("{} passed over when a lost worker was left out (async: no state of those clocks)", passed_over));
  }
  if (behind > 0) {
    causes.push_back(fmt::format(
        "{} while the ones before were still being written to {} (the disk is slower than checkpoints come)", behind,
        dir_));
  }
  if (behind + passed_over < said.size()) {
    causes.push_back(fmt::format(
        "{} while {} newer than clock {} (the newest every server has written; 0: none yet) waited for the other "
        "servers to pass their clocks (checkpoint_keep {}; a server's disk is behind or failing, its log says which)",
        said.size() - behind - passed_over, keep_ == 1 ? "the one" : fmt::format("{} files", keep_), committed_,
        keep_));
  }
  told_ = std::max(told_, newest);
  busy_ = true;
  lock.unlock();
  const Status skipped = makeStatus(StatusCode::kUnavailable, "{} checkpoint(s) skipped, the newest at clock {}: {}",
                                    said.size(), newest, fmt::join(causes, "; "));
  spdlog::warn("server {}: {}", identity_.server, skipped.message());
  if (hooks_.on_miss) hooks_.on_miss(newest, why, skipped);
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::pruneLocked(std::unique_lock<std::mutex>& lock) {
  prune_due_ = false;
  busy_ = true;
  const uint64_t committed = committed_;
  const uint64_t passed_by_all = passed_by_all_;
  lock.unlock();
  if (Status status = pruneCheckpoints(dir_, identity_.server, committed, passed_by_all, keep_); !status.isOk()) {
    // The files are only kept longer; the next prune tries again.
    spdlog::warn("server {}: {}", identity_.server, status.toString());
  }
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::writeOldestLocked(std::unique_lock<std::mutex>& lock) {
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
  const Status status = write_(dir_, identity_, data);
  if (!status.isOk()) {
    spdlog::error("server {}: checkpoint at clock {}: {}", identity_.server, data.clock, status.toString());
  }
  lock.lock();
  writing_ = false;
  told_ = std::max(told_, data.clock);
  if (status.isOk()) {
    undecided_.insert(data.clock);
  } else if (first_error_.isOk()) {
    first_error_ = status;
  }
  // Told after undecided_ holds it, so a commit it leads to finds it; before flush() may return.
  busy_ = true;
  lock.unlock();
  if (status.isOk()) {
    if (hooks_.on_written) hooks_.on_written(data.clock);
  } else if (hooks_.on_miss) {
    hooks_.on_miss(data.clock, CheckpointMiss::kWriteFailed, status);
  }
  lock.lock();
  busy_ = false;
  cv_.notify_all();
}

void Checkpointer::writerLoop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !complete_.empty() || !skipped_.empty() || prune_due_; });
    // In clock order: a skip is said once the snapshots older than it are written.
    if (!skipped_.empty() && (complete_.empty() || complete_.front()->clock > skipped_.front().first)) {
      reportSkippedLocked(lock);
    } else if (prune_due_) {
      pruneLocked(lock);
    } else if (!complete_.empty()) {
      writeOldestLocked(lock);
    } else {
      return;  // stopping with nothing left to write or say
    }
  }
}

bool Checkpointer::commit(uint64_t low, uint32_t bits) {
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  std::lock_guard lock(mutex_);
  if ((committed_ & mask) == (low & mask)) return true;
  std::vector<uint64_t> matches;
  for (const uint64_t clock : undecided_) {
    if ((clock & mask) == (low & mask)) matches.push_back(clock);
  }
  if (matches.size() != 1) {
    // Two files 2^bits clocks apart: which one the workers mean is unknown, so both stay.
    if (matches.size() > 1) {
      spdlog::warn("server {}: a commit names clock {} mod {}, which matches {} of its files; they are kept",
                   identity_.server, low & mask, mask + 1, matches.size());
    }
    return false;
  }
  committed_ = matches.front();
  undecided_.erase(undecided_.begin(), undecided_.upper_bound(committed_));
  prune_due_ = true;
  cv_.notify_all();
  return true;
}

bool Checkpointer::passedByAll(uint64_t low, uint32_t bits) {
  std::lock_guard lock(mutex_);
  uint64_t clock = 0;
  if (!widenAtMost(told_, low, bits, clock)) return false;
  if (clock <= passed_by_all_) return true;
  passed_by_all_ = clock;
  undecided_.erase(undecided_.begin(), undecided_.upper_bound(clock));
  prune_due_ = true;
  cv_.notify_all();
  return true;
}

uint64_t Checkpointer::committed() const {
  std::lock_guard lock(mutex_);
  return committed_;
}

Status Checkpointer::flush() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return complete_.empty() && !writing_ && skipped_.empty() && !prune_due_ && !busy_; });
  return first_error_;
}

}  // namespace poseidon::ps
