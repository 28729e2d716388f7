#include "ps/server.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/chunk_update.h"
#include "ps/checkpoint/checkpoint_notice.h"
#include "ps/checkpoint/checkpointer.h"
#include "ps/checkpoint/durable_file.h"
#include "ps/checkpoint/resume.h"
#include "ps/imm_code.h"
#include "ps/param_send_queue.h"
#include "ps/region_exchange.h"
#include "ps/shard.h"
#include "ps/start_check.h"

namespace poseidon::ps {

using transport::RemoteDescriptor;
using transport::RequestPtr;

namespace {

// How long a worker thread sleeps in one wait before it looks whether the server is stopping.
constexpr auto kServerStopPoll = std::chrono::milliseconds(200);
// A parameter write still reading a chunk must finish before the chunk changes; a write that
// cannot finish in this time belongs to a broken connection, which that worker's thread reports.
constexpr auto kInFlightWait = std::chrono::seconds(60);
// Pulls of one chunk one worker may have waiting; see onPull.
constexpr std::ptrdiff_t kMaxWaitingPulls = 16;
// Chunks of parameter writes one worker that asked for priority may have in the transport: two
// keep its link busy while one finishes, and what waits behind them can still be reordered.
constexpr uint64_t kPrioritySendWindowChunks = 2;

struct PendingPull {
  int worker = 0;
  uint64_t min_version = 0;
};

struct ChunkState {
  std::mutex mutex;
  bool initialized = false;
  uint64_t version = 0;           // BSP/SSP: every worker's pushes of clocks < version applied
  uint64_t steps = 0;             // optimizer steps applied
  std::vector<uint64_t> pushed;   // per worker: pushes received
  std::vector<uint64_t> applied;  // per worker: pushes applied
  // SSP / async after a resume: per worker, pushes of clocks the checkpoint already holds (a
  // faster worker's updates past the clock), acknowledged and counted but not applied again.
  std::vector<uint64_t> replays;
  int arrived = 0;                    // BSP: pushes of clock `version` waiting in the slots
  std::vector<PendingPull> pulls;     // not yet answerable
  std::vector<RequestPtr> in_flight;  // parameter writes reading this chunk
};

enum class WorkerState : uint8_t { kActive, kDone, kFailed };

class ServerImpl final : public Server {
 public:
  ServerImpl(transport::Context& context, const ChunkLayout& layout, const PsJob& job, const ServerOptions& options,
             int server)
      : context_(context),
        job_(job),
        options_(options),
        server_(server),
        chunk_bytes_(layout.chunkBytes()),
        shard_(Shard::of(layout, server)),
        chunks_(shard_.chunks.size()),
        workers_(static_cast<size_t>(job.workers)),
        announce_(static_cast<size_t>(job.workers)) {
    for (ChunkState& chunk : chunks_) {
      chunk.pushed.assign(static_cast<size_t>(job.workers), 0);
      chunk.applied.assign(static_cast<size_t>(job.workers), 0);
      chunk.replays.assign(static_cast<size_t>(job.workers), 0);
    }
    for (auto& state : workers_) state.store(WorkerState::kActive);
    if (options_.average) options_.optimizer.grad_scale = 1.0f / static_cast<float>(job.workers);
  }

  ~ServerImpl() override {
    stopping_.store(true);
    for (std::thread& thread : threads_) thread.join();
    send_queue_.reset();  // after the threads that fill it, before what its posts use
    checkpointer_.reset();
  }

  Status setUp(transport::bootstrap::Store& store, const model::Model& model, Deadline deadline);

  Status waitUntilDone(Deadline deadline) override {
    std::unique_lock lock(done_mutex_);
    // Under BSP/SSP a lost worker ends the job: report it at once rather than at the deadline.
    const auto finished = [&] { return running_workers_ == 0 || !failure_.isOk(); };
    if (deadline.isNever()) {
      done_cv_.wait(lock, finished);
    } else if (!done_cv_.wait_until(lock, deadline.at(), finished)) {
      std::vector<int> left;
      for (int w = 0; w < job_.workers; ++w) {
        if (workers_[static_cast<size_t>(w)].load() == WorkerState::kActive) left.push_back(w);
      }
      lock.unlock();  // chunk locks next; never both
      return makeStatus(StatusCode::kTimeout, "server {}: workers {} still connected at the deadline{}", server_,
                        fmt::join(left, ", "), waitingPullsText());
    }
    if (!failure_.isOk()) return failure_;
    // Async: a worker that left naming a lost server may have lost one link or a dead server; a
    // worker finishing after it proves the servers were there. Without one, the job failed.
    if (!first_server_loss_.isOk() && !finished_since_server_loss_) {
      return first_server_loss_.withContext("no worker finished after one left naming a lost server; the first");
    }
    if (!first_async_loss_.isOk() && lostWorkers().size() == static_cast<size_t>(job_.workers)) {
      return first_async_loss_.withContext("every worker left without finishing; the first");
    }
    if (checkpointer_) return checkpointer_->flush();
    return Status::ok();
  }

  uint64_t resumedClock() const override { return resumed_clock_; }

  std::vector<int> lostWorkers() const override {
    std::vector<int> lost;
    if (options_.consistency.mode != Consistency::Mode::kAsync) return lost;  // there a loss fails the job
    for (int w = 0; w < job_.workers; ++w) {
      if (workers_[static_cast<size_t>(w)].load() == WorkerState::kFailed) lost.push_back(w);
    }
    return lost;
  }

  uint64_t version() const override {
    uint64_t lowest = UINT64_MAX;
    for (ChunkState& chunk : chunks_) {
      std::lock_guard lock(chunk.mutex);
      lowest = std::min(lowest, chunk.version);
    }
    return chunks_.empty() ? 0 : lowest;
  }

  std::span<const float> parameters() const override { return params_; }

  ServerStats stats() const override { return {bytes_pushed_.load(), bytes_pulled_.load(), updates_.load()}; }

 private:
  void workerLoop(int worker);
  Status handle(int worker, const Imm& imm);
  Status onPush(int worker, uint32_t index);
  Status onPull(int worker, uint32_t index, uint32_t low);
  Status onInit(int worker, uint32_t index);
  void onCheckpointRequest(int worker, uint32_t low);
  Status onCheckpointSettled(int worker, const Imm& imm);
  // Fails only when the send queue's thread cannot be started.
  Status onAnnounce(int worker);
  // A worker's wait timed out: tell it afresh whom each of its waiting pulls waits for (a kBlocked
  // is sent when a pull starts waiting, and its blocker may have pushed since), then kPong.
  void onPing(int worker, uint32_t value);
  // "; 6 pulls wait for worker 2" for the deadline's message, or "" when no pull waits.
  std::string waitingPullsText() const;
  void announceLocked(uint32_t index, const ChunkState& chunk, int worker);
  void onWorkerGone(int worker, const Status& why);
  // Worker `worker` said goodbye because it lost server `lost` (kBye with a value).
  void onWorkerLeaving(int worker, uint32_t lost);
  // The worker is out: async goes on without it; BSP and SSP fail with `status` and send the other
  // workers `notice` with `value` (kWorkerFailed naming it, or kServerFailed naming the cause).
  void failWorker(int worker, const Status& status, ToWorker notice, uint64_t value);
  // The worker is out (done, or failed with `failure`, which the job then reports).
  void finishWorker(int worker, WorkerState state, const Status& failure = Status::ok());

  void applyLocked(uint32_t index, ChunkState& chunk, std::span<const float* const> gradients);
  uint64_t versionOf(const ChunkState& chunk) const;
  void publishLocked(uint32_t index, ChunkState& chunk);
  // Answers a pull: at once, or through the priority queue for a worker that asked for priority.
  void sendParamsLocked(uint32_t index, ChunkState& chunk, int worker);
  RequestPtr writeParamsLocked(uint32_t index, ChunkState& chunk, int worker);
  void notify(int worker, ToWorker type, uint32_t chunk, uint64_t value);
  void notifyImm(int worker, uint32_t imm);
  int blockerLocked(const ChunkState& chunk, uint64_t min_version) const;
  const float* slot(int worker, uint32_t index) const {
    return slots_.data() + static_cast<size_t>(worker) * (shard_.bytes / sizeof(float)) +
           shard_.chunks[index].offset / sizeof(float);
  }
  size_t firstElement(uint32_t index) const { return shard_.chunks[index].offset / sizeof(float); }
  bool live(int worker) const { return workers_[static_cast<size_t>(worker)].load() == WorkerState::kActive; }

  transport::Context& context_;
  const PsJob job_;
  ServerOptions options_;
  const int server_;
  const uint64_t chunk_bytes_;
  const Shard shard_;
  mutable std::vector<ChunkState> chunks_;
  std::vector<std::atomic<WorkerState>> workers_;
  // Workers that asked for priority (kAnnounce). Each BSP chunk's first push of a clock is
  // announced to them, so none holds back a chunk the others already sent while its window is
  // full of chunks they have not: with two such workers the aggregation would wait forever. And
  // their parameters go through send_queue_, nearest the input first.
  std::vector<std::atomic<bool>> announce_;

  std::vector<float> params_;
  std::vector<float> slots_;
  std::vector<float> state0_;
  std::vector<float> state1_;
  std::unique_ptr<transport::MemoryRegion> params_region_;
  std::unique_ptr<transport::MemoryRegion> slots_region_;
  std::vector<RemoteDescriptor> worker_params_;
  std::unique_ptr<Checkpointer> checkpointer_;
  uint64_t resumed_clock_ = 0;

  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  int running_workers_ = 0;
  Status failure_;
  // Async: why the first worker it went on without left, and the first that left naming a lost
  // server; whether a worker finished after that one (so every server was there).
  Status first_async_loss_;
  Status first_server_loss_;
  bool finished_since_server_loss_ = false;

  // Parameter writes to the workers that announced priority, nearest the input first.
  std::unique_ptr<ParamSendQueue> send_queue_;

  std::atomic<uint64_t> bytes_pushed_{0};
  std::atomic<uint64_t> bytes_pulled_{0};
  std::atomic<uint64_t> updates_{0};
};

Status ServerImpl::setUp(transport::bootstrap::Store& store, const model::Model& model, Deadline deadline) {
  if (shard_.chunks.size() > kMaxChunksPerServer) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "server {} would hold {} chunks; the protocol allows {} per server (use bigger chunks or "
                      "more servers)",
                      server_, shard_.chunks.size(), kMaxChunksPerServer);
  }
  const size_t elements = shard_.bytes / sizeof(float);
  params_.assign(elements, 0.0f);
  slots_.assign(elements * static_cast<size_t>(job_.workers), 0.0f);
  const int words = options_.optimizer.stateWords();
  if (words >= 1) state0_.assign(elements, options_.optimizer.stateInitialValue(0));
  if (words >= 2) state1_.assign(elements, options_.optimizer.stateInitialValue(1));

  // An empty shard (more servers than chunks) still registers one float so descriptors exist.
  if (params_.empty()) params_.resize(1);
  if (slots_.empty()) slots_.resize(1);
  auto params_region = context_.registerMemory(params_.data(), params_.size() * sizeof(float));
  if (!params_region) return params_region.status().withContext(fmt::format("server {}: parameters", server_));
  params_region_ = std::move(*params_region);
  auto slots_region = context_.registerMemory(slots_.data(), slots_.size() * sizeof(float));
  if (!slots_region) return slots_region.status().withContext(fmt::format("server {}: gradient slots", server_));
  slots_region_ = std::move(*slots_region);

  CheckpointIdentity identity;
  identity.server = static_cast<uint32_t>(server_);
  identity.servers = static_cast<uint32_t>(job_.servers);
  identity.workers = static_cast<uint32_t>(job_.workers);
  identity.chunk_bytes = chunk_bytes_;
  identity.model_fingerprint = modelFingerprint(model.tensors());
  identity.chunks = static_cast<uint32_t>(shard_.chunks.size());
  identity.elements = elements;
  identity.state_words = static_cast<uint32_t>(words);
  identity.optimizer = options_.optimizer.canonical();
  identity.consistency = options_.consistency.canonical();

  const bool checkpoints = !options_.checkpoint_dir.empty();
  if (checkpoints && (options_.checkpoint_keep < 1 || options_.checkpoint_keep > kMaxCheckpointKeep)) {
    return makeStatus(StatusCode::kInvalidArgument, "server {}: checkpoint_keep {} is not in 1..{}", server_,
                      options_.checkpoint_keep, kMaxCheckpointKeep);
  }
  if (checkpoints) POSEIDON_RETURN_IF_ERROR(checkWritableDirectory(options_.checkpoint_dir));
  HeldCheckpoints held;
  held.resume = options_.resume;
  if (checkpoints) {
    held.clocks = listCheckpoints(options_.checkpoint_dir, identity.server);
    held.dir = options_.checkpoint_dir;
  }
  POSEIDON_RETURN_IF_ERROR(publishCheckpointClocks(store, job_, server_, held));
  POSEIDON_RETURN_IF_ERROR(publishServerRegions(store, job_, server_, *params_region_, *slots_region_));
  auto resume = agreeResumeClock(store, job_, deadline);
  if (!resume) return resume.status();
  resumed_clock_ = *resume;
  if (resumed_clock_ > 0) {
    CheckpointData data;
    data.params = std::span<float>(params_.data(), elements);
    data.state0 = state0_;
    data.state1 = state1_;
    POSEIDON_RETURN_IF_ERROR(loadCheckpoint(options_.checkpoint_dir, identity, resumed_clock_, data));
    for (size_t j = 0; j < chunks_.size(); ++j) {
      ChunkState& chunk = chunks_[j];
      chunk.initialized = true;
      chunk.version = resumed_clock_;
      chunk.steps = data.chunk_steps[j];
      // Every worker goes on from the resumed clock. Under SSP / async a chunk's snapshot was
      // taken when its slowest worker reached the clock, and may hold a faster one's next pushes:
      // that worker's pushes of those clocks come again and count, but are not applied twice.
      for (size_t w = 0; w < chunk.applied.size(); ++w) {
        const uint64_t in_snapshot = data.applied[j * chunk.applied.size() + w];
        chunk.applied[w] = chunk.pushed[w] = resumed_clock_;
        chunk.replays[w] = in_snapshot > resumed_clock_ ? in_snapshot - resumed_clock_ : 0;
      }
    }
    spdlog::info("server {}: resumed from clock {}", server_, resumed_clock_);
  }
  if (checkpoints) {
    // Every outcome goes to every worker still here: a written file, so the workers can say which
    // clock every server has (then older files may go: ps/checkpoint/checkpointer.h); a failed
    // write or a skipped checkpoint, so the job's log says a checkpoint is missing where someone
    // looks, not only in this server's.
    auto tell_workers = [this](uint64_t clock, CheckpointOutcome outcome) {
      const uint32_t imm = encodeCheckpointNotice(static_cast<uint8_t>(ToWorker::kCheckpointOutcome),
                                                  static_cast<uint32_t>(outcome), kOutcomeCodeBits, clock);
      for (int w = 0; w < job_.workers; ++w) {
        if (live(w)) notifyImm(w, imm);
      }
    };
    CheckpointerHooks hooks;
    hooks.on_written = [tell_workers](uint64_t clock) { tell_workers(clock, CheckpointOutcome::kWritten); };
    hooks.on_miss = [tell_workers](uint64_t clock, CheckpointMiss miss, const Status&) {
      tell_workers(clock, miss == CheckpointMiss::kWriteFailed       ? CheckpointOutcome::kWriteFailed
                          : miss == CheckpointMiss::kSkippedAwaiting ? CheckpointOutcome::kAwaitingServers
                          : miss == CheckpointMiss::kPassedOver      ? CheckpointOutcome::kPassedOver
                                                                     : CheckpointOutcome::kDiskBehind);
    };
    hooks.write = options_.checkpoint_writer;
    checkpointer_ = std::make_unique<Checkpointer>(options_.checkpoint_dir, identity, shard_, options_.checkpoint_every,
                                                   options_.checkpoint_keep, resumed_clock_, std::move(hooks));
  }
  auto descriptors = fetchWorkerRegions(store, job_, deadline);
  if (!descriptors) return descriptors.status();
  worker_params_ = std::move(*descriptors);

  std::vector<uint64_t> chunk_bytes;
  for (const ShardChunk& chunk : shard_.chunks) chunk_bytes.push_back(chunk.bytes);
  send_queue_ =
      std::make_unique<ParamSendQueue>(job_.workers, std::move(chunk_bytes), kPrioritySendWindowChunks * chunk_bytes_,
                                       [this](int worker, uint32_t index) -> RequestPtr {
                                         ChunkState& chunk = chunks_[index];
                                         std::lock_guard lock(chunk.mutex);
                                         if (!live(worker)) return nullptr;
                                         return writeParamsLocked(index, chunk, worker);
                                       });
  running_workers_ = job_.workers;
  for (int worker = 0; worker < job_.workers; ++worker) {
    threads_.emplace_back([this, worker] { workerLoop(worker); });
  }
  return Status::ok();
}

void ServerImpl::workerLoop(int worker) {
  transport::Pair& pair = context_.pair(job_.workerRank(worker));
  RequestPtr next = pair.recvImm();
  while (!stopping_.load()) {
    (void)next->wait(Deadline::after(kServerStopPoll));
    if (!next->test()) continue;  // it may complete between the timeout and this look
    Status status = next->status();
    if (!status.isOk()) {
      onWorkerGone(worker, status);
      return;
    }
    const Imm imm = decodeImm(next->imm());
    if (imm.type == static_cast<uint8_t>(ToServer::kBye)) {
      if (imm.value == 0) {
        finishWorker(worker, WorkerState::kDone);
      } else {
        onWorkerLeaving(worker, imm.value - 1);
      }
      return;
    }
    next = pair.recvImm();  // posted before the work so the backend can queue the next one
    status = handle(worker, imm);
    if (!status.isOk()) {
      onWorkerGone(worker, status);
      return;
    }
  }
}

Status ServerImpl::handle(int worker, const Imm& imm) {
  if (imm.chunk >= chunks_.size() && imm.type != static_cast<uint8_t>(ToServer::kCheckpoint) &&
      imm.type != static_cast<uint8_t>(ToServer::kAnnounce) && imm.type != static_cast<uint8_t>(ToServer::kPing) &&
      imm.type != static_cast<uint8_t>(ToServer::kCheckpointSettled)) {
    return makeStatus(StatusCode::kProtocolError, "worker {} named chunk {} but server {} holds {} chunks", worker,
                      imm.chunk, server_, chunks_.size());
  }
  switch (static_cast<ToServer>(imm.type)) {
    case ToServer::kPush: return onPush(worker, imm.chunk);
    case ToServer::kPull: return onPull(worker, imm.chunk, imm.value);
    case ToServer::kInit: return onInit(worker, imm.chunk);
    case ToServer::kCheckpoint: onCheckpointRequest(worker, imm.value); return Status::ok();
    case ToServer::kAnnounce: return onAnnounce(worker);
    case ToServer::kPing: onPing(worker, imm.value); return Status::ok();
    case ToServer::kCheckpointSettled: return onCheckpointSettled(worker, imm);
    case ToServer::kBye: break;  // handled by workerLoop
  }
  return makeStatus(StatusCode::kProtocolError, "worker {} sent immediate type {} (expected 0..7)", worker, imm.type);
}

Status ServerImpl::onPush(int worker, uint32_t index) {
  ChunkState& chunk = chunks_[index];
  std::lock_guard lock(chunk.mutex);
  const size_t w = static_cast<size_t>(worker);
  bytes_pushed_.fetch_add(shard_.chunks[index].bytes, std::memory_order_relaxed);
  if (!chunk.initialized) {
    return makeStatus(StatusCode::kProtocolError, "worker {} pushed chunk {} of server {} before it was initialised",
                      worker, shard_.chunks[index].global, server_);
  }
  if (options_.consistency.mode != Consistency::Mode::kBsp) {
    ++chunk.pushed[w];
    if (chunk.replays[w] > 0) {
      --chunk.replays[w];  // the resumed checkpoint holds this update already
    } else {
      const float* gradient = slot(worker, index);
      applyLocked(index, chunk, std::span<const float* const>(&gradient, 1));
    }
    ++chunk.applied[w];
    notify(worker, ToWorker::kAck, index, 0);
    publishLocked(index, chunk);
    return Status::ok();
  }
  // BSP: at most one push per worker per chunk is outstanding (the next waits for the ack).
  if (chunk.pushed[w] != chunk.version) {
    return makeStatus(StatusCode::kProtocolError,
                      "worker {} pushed chunk {} for clock {} while server {} is at clock {}: a push before the "
                      "previous one was acknowledged",
                      worker, shard_.chunks[index].global, chunk.pushed[w], server_, chunk.version);
  }
  ++chunk.pushed[w];
  if (++chunk.arrived == 1) {
    for (int p = 0; p < job_.workers; ++p) announceLocked(index, chunk, p);
  }
  if (chunk.arrived < job_.workers) return Status::ok();
  thread_local std::vector<const float*> gradients;
  gradients.clear();
  for (int p = 0; p < job_.workers; ++p) gradients.push_back(slot(p, index));
  applyLocked(index, chunk, gradients);
  chunk.arrived = 0;
  for (int p = 0; p < job_.workers; ++p) {
    ++chunk.applied[static_cast<size_t>(p)];
    if (live(p)) notify(p, ToWorker::kAck, index, 0);
  }
  publishLocked(index, chunk);
  return Status::ok();
}

void ServerImpl::applyLocked(uint32_t index, ChunkState& chunk, std::span<const float* const> gradients) {
  // Parameter writes still reading this chunk must finish before it changes under them.
  for (const RequestPtr& write : chunk.in_flight) (void)write->wait(Deadline::after(kInFlightWait));
  chunk.in_flight.clear();
  const size_t first = firstElement(index);
  kernels::ChunkUpdate update;
  update.params = params_.data() + first;
  update.state0 = state0_.empty() ? nullptr : state0_.data() + first;
  update.state1 = state1_.empty() ? nullptr : state1_.data() + first;
  update.count = shard_.chunks[index].bytes / sizeof(float);
  update.gradients = gradients;
  update.step = options_.optimizer.stepFor(chunk.steps);
  if (options_.optimizer.sum_only) std::fill_n(update.params, update.count, 0.0f);
  kernels::chunkUpdateCpu(update);
  ++chunk.steps;
  updates_.fetch_add(1, std::memory_order_relaxed);
}

uint64_t ServerImpl::versionOf(const ChunkState& chunk) const {
  uint64_t lowest = UINT64_MAX;
  for (int w = 0; w < job_.workers; ++w) {
    // Async goes on without workers that left or died; BSP and SSP fail instead (onWorkerGone).
    if (options_.consistency.mode == Consistency::Mode::kAsync && !live(w)) continue;
    lowest = std::min(lowest, chunk.applied[static_cast<size_t>(w)]);
  }
  return lowest == UINT64_MAX ? chunk.version : std::max(lowest, chunk.version);
}

void ServerImpl::publishLocked(uint32_t index, ChunkState& chunk) {
  const uint64_t version = versionOf(chunk);
  if (version != chunk.version) {
    // Async: a lost worker left out, the version can jump several clocks at once. No state of the
    // clocks passed over exists (nor the lost worker's file of them): their checkpoints are
    // skipped, or a snapshot other chunks began would wait for this chunk for good.
    const uint64_t passed_from = chunk.version + 1;
    if (checkpointer_) {
      const size_t first = firstElement(index);
      // A checkpoint records the pushes whose updates the parameters hold: a worker's replays still
      // to come are among them (a later resume from this checkpoint drops them too).
      std::span<const uint64_t> held = chunk.applied;
      thread_local std::vector<uint64_t> with_replays;
      if (std::any_of(chunk.replays.begin(), chunk.replays.end(), [](uint64_t r) { return r > 0; })) {
        with_replays.resize(chunk.applied.size());
        for (size_t w = 0; w < with_replays.size(); ++w) with_replays[w] = chunk.applied[w] + chunk.replays[w];
        held = with_replays;
      }
      if (passed_from < version) checkpointer_->onPassedOver(passed_from, version);
      checkpointer_->onVersion(index, version, chunk.steps, held, params_.data() + first,
                               state0_.empty() ? nullptr : state0_.data() + first,
                               state1_.empty() ? nullptr : state1_.data() + first);
    }
    chunk.version = version;
  }
  const bool async = options_.consistency.mode == Consistency::Mode::kAsync;
  auto answered = [&](const PendingPull& pull) {
    if (!chunk.initialized || (!async && chunk.version < pull.min_version)) return false;
    if (live(pull.worker)) sendParamsLocked(index, chunk, pull.worker);
    return true;
  };
  chunk.pulls.erase(std::remove_if(chunk.pulls.begin(), chunk.pulls.end(), answered), chunk.pulls.end());
}

Status ServerImpl::onPull(int worker, uint32_t index, uint32_t low) {
  ChunkState& chunk = chunks_[index];
  std::lock_guard lock(chunk.mutex);
  // A worker asks at most for the version its own pushes make possible.
  const uint64_t pushed = chunk.pushed[static_cast<size_t>(worker)];
  const uint64_t min_version = widenAtMost(pushed, low);
  if (min_version > pushed) {  // widening wrapped below zero: no version this worker could wait for
    return makeStatus(StatusCode::kProtocolError,
                      "worker {} asked for chunk {} of server {} at a version (low bits {}) beyond its {} pushes",
                      worker, shard_.chunks[index].global, server_, low, pushed);
  }
  const bool async = options_.consistency.mode == Consistency::Mode::kAsync;
  if (chunk.initialized && (async || chunk.version >= min_version)) {
    sendParamsLocked(index, chunk, worker);
    return Status::ok();
  }
  // A worker has one or two pulls of a chunk waiting (BSP's early pull and its own); a peer that
  // piles up more would grow this list without bound.
  const auto waiting = std::count_if(chunk.pulls.begin(), chunk.pulls.end(),
                                     [worker](const PendingPull& pull) { return pull.worker == worker; });
  if (waiting >= kMaxWaitingPulls) {
    return makeStatus(StatusCode::kProtocolError,
                      "worker {} has {} pulls of chunk {} of server {} waiting (at most {}); the last asked for "
                      "version {} at server version {}",
                      worker, waiting, shard_.chunks[index].global, server_, kMaxWaitingPulls, min_version,
                      chunk.version);
  }
  chunk.pulls.push_back({worker, min_version});
  notify(worker, ToWorker::kBlocked, index, static_cast<uint64_t>(blockerLocked(chunk, min_version)));
  return Status::ok();
}

void ServerImpl::onPing(int worker, uint32_t value) {
  for (uint32_t index = 0; index < chunks_.size(); ++index) {
    ChunkState& chunk = chunks_[index];
    std::lock_guard lock(chunk.mutex);
    for (const PendingPull& pull : chunk.pulls) {
      if (pull.worker != worker) continue;
      notify(worker, ToWorker::kBlocked, index, static_cast<uint64_t>(blockerLocked(chunk, pull.min_version)));
    }
  }
  notify(worker, ToWorker::kPong, 0, value);
}

std::string ServerImpl::waitingPullsText() const {
  size_t pulls = 0;
  std::vector<int> blockers;
  for (ChunkState& chunk : chunks_) {  // mutable: its lock
    std::lock_guard lock(chunk.mutex);
    for (const PendingPull& pull : chunk.pulls) {
      ++pulls;
      const int blocker = blockerLocked(chunk, pull.min_version);
      if (std::find(blockers.begin(), blockers.end(), blocker) == blockers.end()) blockers.push_back(blocker);
    }
  }
  if (pulls == 0) return "";
  std::sort(blockers.begin(), blockers.end());
  return fmt::format("; {} pulls wait for worker {}", pulls, fmt::join(blockers, ", "));
}

int ServerImpl::blockerLocked(const ChunkState& chunk, uint64_t min_version) const {
  if (!chunk.initialized) return 0;  // worker 0 initialises
  for (int w = 0; w < job_.workers; ++w) {
    const size_t i = static_cast<size_t>(w);
    // BSP waits for pushes, SSP for applied updates; the lowest rank behind is named.
    const uint64_t done = options_.consistency.mode == Consistency::Mode::kBsp ? chunk.pushed[i] : chunk.applied[i];
    if (done < min_version) return w;
  }
  return 0;
}

Status ServerImpl::onInit(int worker, uint32_t index) {
  ChunkState& chunk = chunks_[index];
  std::lock_guard lock(chunk.mutex);
  if (worker != 0 || chunk.initialized) {
    return makeStatus(StatusCode::kProtocolError,
                      "worker {} initialised chunk {} of server {} (only worker 0 does, once, on a fresh start)",
                      worker, shard_.chunks[index].global, server_);
  }
  chunk.initialized = true;
  publishLocked(index, chunk);
  return Status::ok();
}

void ServerImpl::onCheckpointRequest(int worker, uint32_t low) {
  if (!checkpointer_) {
    spdlog::warn("server {}: worker {} asked for a checkpoint but no checkpoint directory is set; told it so", server_,
                 worker);
    notifyImm(worker,
              encodeCheckpointNotice(static_cast<uint8_t>(ToWorker::kCheckpointOutcome),
                                     static_cast<uint32_t>(CheckpointOutcome::kNoDirectory), kOutcomeCodeBits, low));
    return;
  }
  checkpointer_->request(widenAtLeast(version(), low));
}

Status ServerImpl::onCheckpointSettled(int worker, const Imm& imm) {
  const CheckpointNotice notice = decodeCheckpointNotice(imm, kSettledCodeBits);
  const uint32_t bits = noticeClockBits(kSettledCodeBits);
  if (!checkpointer_) {
    return makeStatus(StatusCode::kProtocolError,
                      "worker {} told what every server did with checkpoint clock {} (mod 2^{}), but server {} takes "
                      "no checkpoints",
                      worker, notice.clock_low, bits, server_);
  }
  // Words this server cannot place (another worker's older word, a clock it has no file of) change
  // nothing: its files are kept.
  if (notice.code == static_cast<uint32_t>(CheckpointSettled::kCommitted)) {
    (void)checkpointer_->commit(notice.clock_low, bits);
  } else {
    (void)checkpointer_->passedByAll(notice.clock_low, bits);
  }
  return Status::ok();
}

Status ServerImpl::onAnnounce(int worker) {
  // Before any answer can be queued for it: the queue's thread starts here (once for all
  // workers), outside every chunk lock.
  POSEIDON_RETURN_IF_ERROR(send_queue_->start());
  if (announce_[static_cast<size_t>(worker)].exchange(true)) return Status::ok();  // a peer may repeat it
  // Pushes that arrived before: onPush, under the same chunk lock, announces those that follow.
  for (uint32_t index = 0; index < chunks_.size(); ++index) {
    std::lock_guard lock(chunks_[index].mutex);
    if (chunks_[index].arrived > 0) announceLocked(index, chunks_[index], worker);
  }
  return Status::ok();
}

void ServerImpl::announceLocked(uint32_t index, const ChunkState& chunk, int worker) {
  const size_t w = static_cast<size_t>(worker);
  if (announce_[w].load() && live(worker) && chunk.pushed[w] == chunk.version) {
    notify(worker, ToWorker::kAwaited, index, chunk.version);
  }
}

void ServerImpl::sendParamsLocked(uint32_t index, ChunkState& chunk, int worker) {
  if (announce_[static_cast<size_t>(worker)].load()) {
    send_queue_->enqueue(worker, index);
    return;
  }
  (void)writeParamsLocked(index, chunk, worker);
}

RequestPtr ServerImpl::writeParamsLocked(uint32_t index, ChunkState& chunk, int worker) {
  const ShardChunk& where = shard_.chunks[index];
  transport::Pair& pair = context_.pair(job_.workerRank(worker));
  RequestPtr write =
      pair.write(*params_region_, where.offset, worker_params_[static_cast<size_t>(worker)], where.model_offset,
                 where.bytes, encodeImm(static_cast<uint8_t>(ToWorker::kParams), index, chunk.version));
  chunk.in_flight.push_back(write);
  bytes_pulled_.fetch_add(where.bytes, std::memory_order_relaxed);
  return write;
}

void ServerImpl::notify(int worker, ToWorker type, uint32_t chunk, uint64_t value) {
  notifyImm(worker, encodeImm(static_cast<uint8_t>(type), chunk, value));
}

void ServerImpl::notifyImm(int worker, uint32_t imm) {
  // An empty write: only the immediate travels. A failure shows up in that worker's thread.
  (void)context_.pair(job_.workerRank(worker))
      .write(*params_region_, 0, worker_params_[static_cast<size_t>(worker)], 0, 0, imm);
}

void ServerImpl::onWorkerGone(int worker, const Status& why) {
  if (stopping_.load()) return;
  // What this server was waiting for when the worker went says more than the worker's leaving:
  // a worker that gave up on a cut-off peer leaves first, and the pulls name that peer.
  failWorker(worker,
             makeStatus(StatusCode::kConnectionError, "server {}: worker {} (rank {}) is gone{}: {}", server_, worker,
                        job_.workerRank(worker), waitingPullsText(), why.toString()),
             ToWorker::kWorkerFailed, static_cast<uint64_t>(worker));
}

void ServerImpl::onWorkerLeaving(int worker, uint32_t lost) {
  if (stopping_.load()) return;
  if (lost >= static_cast<uint32_t>(job_.servers) || lost == static_cast<uint32_t>(server_)) {
    onWorkerGone(worker, makeStatus(StatusCode::kProtocolError,
                                    "it said it leaves because of server {}, expected another of servers 0..{}", lost,
                                    job_.servers - 1));
    return;
  }
  // The cause, not the messenger: servers do not talk to each other, so a dead server is known
  // here only through the workers that lost it.
  const int rank = job_.serverRank(static_cast<int>(lost));
  failWorker(worker,
             makeStatus(StatusCode::kConnectionError,
                        "server {}: the job failed at server {} (rank {}): worker {} (rank {}) lost it and left",
                        server_, lost, rank, worker, job_.workerRank(worker)),
             ToWorker::kServerFailed, lost);
}

void ServerImpl::failWorker(int worker, const Status& status, ToWorker notice, uint64_t value) {
  // Async goes on without the worker, whether it was lost or lost a server: one broken link to
  // another server looks the same from here as that server's death. waitUntilDone tells them
  // apart as well as it can: the job failed when no worker finished after one named a lost
  // server, or when every worker left unfinished.
  if (options_.consistency.mode == Consistency::Mode::kAsync) {
    {
      std::lock_guard lock(done_mutex_);
      if (first_async_loss_.isOk()) first_async_loss_ = status;
      if (notice == ToWorker::kServerFailed && first_server_loss_.isOk()) first_server_loss_ = status;
    }
    finishWorker(worker, WorkerState::kFailed);
    spdlog::warn("{}; async training goes on without it", status.toString());
    for (uint32_t j = 0; j < chunks_.size(); ++j) {
      std::lock_guard lock(chunks_[j].mutex);
      publishLocked(j, chunks_[j]);
    }
    return;
  }
  spdlog::error("{}", status.toString());
  // The others hear it before waitUntilDone can return.
  for (int w = 0; w < job_.workers; ++w) {
    if (w != worker && live(w)) notify(w, notice, 0, value);
  }
  finishWorker(worker, WorkerState::kFailed, status);
}

void ServerImpl::finishWorker(int worker, WorkerState state, const Status& failure) {
  workers_[static_cast<size_t>(worker)].store(state);
  std::lock_guard lock(done_mutex_);
  // Recorded before the count drops: waitUntilDone wakes when the last worker is out, and must
  // not take workers that all failed at once for workers that all finished.
  if (!failure.isOk() && failure_.isOk()) failure_ = failure;
  if (state == WorkerState::kDone && !first_server_loss_.isOk()) finished_since_server_loss_ = true;
  --running_workers_;
  done_cv_.notify_all();
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(transport::Context& context, transport::bootstrap::Store& store,
                                              const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                              const ServerOptions& options, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(job.validate(context));
  POSEIDON_RETURN_IF_ERROR(options.optimizer.validate());
  POSEIDON_RETURN_IF_ERROR(options.consistency.validate());
  if (options.optimizer.sum_only && options.consistency.mode != Consistency::Mode::kBsp) {
    // SSP and async apply each push on its own: a sum server would hand out single gradients.
    return makeStatus(StatusCode::kInvalidArgument, "optimizer sum needs BSP consistency, not {}",
                      options.consistency.canonical());
  }
  if (!job.isServerRank(context.rank())) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "rank {} is not a server rank of the PS job ({} workers, {} servers)", context.rank(),
                      job.workers, job.servers);
  }
  POSEIDON_RETURN_IF_ERROR(model.validate());
  POSEIDON_RETURN_IF_ERROR(layout.checkLaysOut(model.tensors()).withContext(fmt::format("model '{}'", model.name())));
  if (layout.servers() != job.servers) {
    return makeStatus(StatusCode::kInvalidArgument, "the chunk layout is for {} servers; the job has {}",
                      layout.servers(), job.servers);
  }
  const ServerSetUp set_up{&options.optimizer, options.average,
                           options.checkpoint_dir.empty()
                               ? std::string("off")
                               : fmt::format("every {}, keep {}", options.checkpoint_every, options.checkpoint_keep)};
  POSEIDON_RETURN_IF_ERROR(
      agreeOnPsJob(store, job, context.rank(), model, layout, options.consistency, &set_up, deadline));
  auto server = std::make_unique<ServerImpl>(context, layout, job, options, context.rank() - job.workers);
  POSEIDON_RETURN_IF_ERROR(server->setUp(store, model, deadline));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace poseidon::ps
