#include "ps/client.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/deadline_wait.h"
#include "ps/checkpoint/checkpoint_commits.h"
#include "ps/checkpoint/checkpoint_notice.h"
#include "ps/checkpoint/resume.h"
#include "ps/held_chunks.h"
#include "ps/imm_code.h"
#include "ps/region_exchange.h"
#include "ps/shard.h"
#include "ps/start_check.h"

namespace poseidon::ps {

using transport::Request;
using transport::RequestPtr;

namespace {

constexpr auto kClientStopPoll = std::chrono::milliseconds(200);
// How long a timed-out wait asks the servers it waits on whether they are alive. A live server
// answers within a round trip even while it waits for a straggler.
constexpr auto kPingWait = std::chrono::milliseconds(1000);
constexpr auto kLeavingNoticeWait = std::chrono::milliseconds(500);
constexpr uint32_t kNoPong = UINT32_MAX;  // no pong yet (pong values are 15 bits)

// One push() or pull(): completes when every chunk it needs is done.
struct Op {
  RequestPtr request;
  size_t remaining = 0;
  uint64_t bytes = 0;
};
using OpPtr = std::shared_ptr<Op>;

OpPtr newOp(RequestPtr request, size_t chunks) {
  auto op = std::make_shared<Op>();
  op->request = std::move(request);
  op->remaining = chunks;
  return op;
}

void finishOne(const OpPtr& op) {
  if (--op->remaining == 0) op->request->complete(Status::ok(), op->bytes);
}

struct PullInFlight {
  uint64_t min_version = 0;
  std::vector<OpPtr> ops;
  bool sent = false;
};

struct ChunkTrack {
  int server = 0;
  uint32_t local = 0;
  uint64_t model_offset = 0;
  uint64_t shard_offset = 0;  // in the server's parameters
  uint64_t slot_offset = 0;   // this worker's slot on the server
  uint64_t bytes = 0;
  size_t layers = 0;  // layers with bytes in the chunk
  // Push: the chunk goes once all its layers pushed and the previous push was acknowledged.
  size_t push_ready = 0;
  uint64_t pushes = 0;
  bool awaiting_ack = false;
  bool queued = false;  // ready, held back by the server's push window
  // Priority: the clock another worker pushed this chunk for first (ToWorker::kAwaited). While it
  // is the clock of our next push, that push goes past the window: see queuePushLocked.
  uint64_t awaited = UINT64_MAX;
  std::vector<OpPtr> push_ops;  // waiting for this chunk to be written
  std::vector<OpPtr> ack_ops;   // waiting for the ack of the write in flight
  // Pull
  size_t pull_ready = 0;
  uint64_t pull_min = 0;
  std::vector<OpPtr> pull_ops;     // waiting for the chunk's other layers to ask
  std::deque<PullInFlight> pulls;  // asked (or about to be), waiting for the parameters
  uint64_t version = 0;            // of the parameters in our buffer
  bool received = false;           // none yet: the buffer holds only what the trainer put there
  int blocker = -1;                // worker the server said the pull waits for
};

struct LayerTrack {
  std::string name;
  std::vector<uint32_t> chunks;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // (byte offset, bytes) of its tensors
  uint64_t clock = 0;
};

class ClientImpl final : public Client {
 public:
  ClientImpl(transport::Context& context, const PsJob& job, const ClientOptions& options)
      : context_(context),
        job_(job),
        consistency_(options.consistency),
        worker_(context.rank()),
        push_window_bytes_(options.push.window_bytes),
        priority_(options.push.priority) {}

  ~ClientImpl() override {
    // A caller that saw a server's connection fail before serverLoop did leaves through here (a
    // finish() that succeeded set stopping_: the servers let this worker go then).
    for (int server = 0; server < job_.servers && !stopping_.load(); ++server) {
      if (!context_.pair(job_.serverRank(server)).status().isOk()) {
        tellOtherServersWhyWeLeave(server);
        break;
      }
    }
    stopping_.store(true);
    for (std::thread& thread : threads_) thread.join();
  }

  Status setUp(transport::bootstrap::Store& store, const model::Model& model, const ChunkLayout& layout,
               Deadline deadline);

  std::span<float> parameters(size_t tensor) override {
    return {params_.data() + tensor_offsets_[tensor] / sizeof(float), tensor_floats_[tensor]};
  }
  std::span<float> gradients(size_t tensor) override {
    return {grads_.data() + tensor_offsets_[tensor] / sizeof(float), tensor_floats_[tensor]};
  }
  std::span<float> allParameters() override { return {params_.data(), model_bytes_ / sizeof(float)}; }
  uint64_t startClock() const override { return start_clock_; }
  Status initialize(Deadline deadline) override;
  RequestPtr push(size_t layer) override;
  RequestPtr pull(size_t layer) override;
  RequestPtr pull(size_t layer, uint64_t min_version) override;
  Status wait(const RequestPtr& request, Deadline deadline) override;
  uint64_t clock(size_t layer) const override {
    std::lock_guard lock(mutex_);
    return layers_.at(layer).clock;
  }
  uint64_t version(size_t layer) const override;
  size_t layerCount() const override { return layers_.size(); }
  Status requestCheckpoint(uint64_t clock) override;
  uint64_t committedCheckpoint() const override {
    std::lock_guard lock(mutex_);
    return checkpoint_commits_.committed();
  }
  Status finish(Deadline deadline) override;

 private:
  void serverLoop(int server);
  // The connection to server `lost` failed: the other servers get a kBye naming it, so they name it too.
  void tellOtherServersWhyWeLeave(int lost);
  Status handle(int server, const Imm& imm);
  void sendPushLocked(uint32_t chunk);
  void queuePushLocked(uint32_t chunk);
  void drainPushesLocked(int server);
  void sendPullLocked(uint32_t chunk);
  void flushPullsLocked(uint32_t chunk);
  void signal(int server, ToServer type, uint32_t chunk, uint64_t value);
  void signalImm(int server, uint32_t imm);
  void failAllLocked(const Status& status);
  // Until no pull this worker sent awaits its answer (or the first failure, or the deadline).
  Status waitForSentPulls(Deadline deadline);
  Status onCheckpointOutcomeLocked(int server, const Imm& imm);
  // Tells every server what all of them did with a checkpoint clock (ps/checkpoint/checkpoint_commits.h).
  void settleLocked(CheckpointSettled what, uint64_t clock);
  // Pings `servers` and returns those that did not answer within kPingWait (the lock is released
  // while the pings go out and while waiting).
  std::vector<int> unansweredPingsLocked(std::unique_lock<std::mutex>& lock, const std::vector<int>& servers);
  uint32_t globalChunk(int server, uint32_t local) const {
    return local * static_cast<uint32_t>(job_.servers) + static_cast<uint32_t>(server);
  }
  RequestPtr newRequest(const char* what, size_t layer) {
    return std::make_shared<Request>(fmt::format("{} of layer '{}' at clock {} by worker {}", what, layers_[layer].name,
                                                 layers_[layer].clock, worker_));
  }

  transport::Context& context_;
  const PsJob job_;
  const Consistency consistency_;
  const int worker_;
  const uint64_t push_window_bytes_;
  const bool priority_;
  uint64_t model_bytes_ = 0;
  std::vector<uint64_t> tensor_offsets_;
  std::vector<size_t> tensor_floats_;
  std::vector<float> params_;
  std::vector<float> grads_;
  std::vector<float> accumulated_;  // async with n_push > 1
  std::unique_ptr<transport::MemoryRegion> params_region_;
  std::unique_ptr<transport::MemoryRegion> grads_region_;
  std::vector<ServerRegions> servers_;
  uint64_t start_clock_ = 0;

  mutable std::mutex mutex_;
  std::vector<ChunkTrack> chunks_;
  // Per server: pushed bytes not yet acknowledged, and chunks ready but held back, so acks pace
  // this worker to the aggregation (see push_window_bytes). Held chunks leave by index under
  // priority, else in the order they became ready; the room is reserved for every chunk of the
  // server (a chunk is held at most once), so holding never allocates.
  std::vector<uint64_t> unacked_bytes_;
  std::vector<HeldChunks> held_;
  std::vector<LayerTrack> layers_;
  Status failure_;
  std::condition_variable failure_cv_;  // a failure, or a pull answered (finish() waits for those)
  // Liveness probes after a timed-out wait: per server, the value of its last kPong.
  std::vector<uint32_t> pongs_;
  Status checkpoint_refusal_;                   // the first refusal not yet returned by requestCheckpoint
  CheckpointCommits checkpoint_commits_{0, 0};  // set up once the start clock is known
  uint32_t next_ping_ = 0;
  std::condition_variable pong_cv_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  // Set by finish() before its first kBye goes out. A server may close its connections the moment
  // it has every worker's kBye, before this worker's last kBye left (or stopping_ is set): that
  // close is the job ending, not a server lost.
  std::atomic<bool> saying_bye_{false};
  std::atomic<bool> told_why_we_leave_{false};
};

Status ClientImpl::setUp(transport::bootstrap::Store& store, const model::Model& model, const ChunkLayout& layout,
                         Deadline deadline) {
  const std::vector<model::Tensor> tensors = model.tensors();
  POSEIDON_RETURN_IF_ERROR(layout.checkLaysOut(tensors).withContext(fmt::format("model '{}'", model.name())));
  for (size_t t = 0; t < tensors.size(); ++t) {
    tensor_offsets_.push_back(model_bytes_);
    tensor_floats_.push_back(tensors[t].floats);
    model_bytes_ += tensors[t].floats * sizeof(float);
  }

  std::vector<Shard> shards;
  for (int s = 0; s < job_.servers; ++s) shards.push_back(Shard::of(layout, s));
  chunks_.resize(layout.chunks().size());
  for (const Shard& shard : shards) {
    for (size_t j = 0; j < shard.chunks.size(); ++j) {
      ChunkTrack& chunk = chunks_[shard.chunks[j].global];
      chunk.server = shard.server;
      chunk.local = static_cast<uint32_t>(j);
      chunk.model_offset = shard.chunks[j].model_offset;
      chunk.shard_offset = shard.chunks[j].offset;
      chunk.slot_offset = static_cast<uint64_t>(worker_) * shard.bytes + shard.chunks[j].offset;
      chunk.bytes = shard.chunks[j].bytes;
    }
  }
  // Layer l owns tensors [starts[l], starts[l + 1]): every tensor in exactly one layer, so every
  // chunk byte has an owner that pushes it.
  const std::vector<size_t> starts = model.layerStarts();
  for (size_t l = 0; l < starts.size(); ++l) {
    LayerTrack track;
    track.name = model.layers()[l].name();
    const size_t end = l + 1 < starts.size() ? starts[l + 1] : tensors.size();
    for (size_t tensor = starts[l]; tensor < end; ++tensor) {
      track.ranges.emplace_back(tensor_offsets_[tensor], tensors[tensor].floats * sizeof(float));
      for (const TensorPiece& piece : layout.piecesOf(tensor)) track.chunks.push_back(piece.chunk);
    }
    std::sort(track.chunks.begin(), track.chunks.end());
    track.chunks.erase(std::unique(track.chunks.begin(), track.chunks.end()), track.chunks.end());
    for (uint32_t chunk : track.chunks) ++chunks_[chunk].layers;
    layers_.push_back(std::move(track));
  }

  params_.assign(model_bytes_ / sizeof(float), 0.0f);
  grads_.assign(model_bytes_ / sizeof(float), 0.0f);
  if (consistency_.mode == Consistency::Mode::kAsync && consistency_.n_push > 1) {
    accumulated_.assign(grads_.size(), 0.0f);
  }
  auto params_region = context_.registerMemory(params_.data(), model_bytes_);
  if (!params_region) return params_region.status().withContext(fmt::format("worker {}: parameters", worker_));
  params_region_ = std::move(*params_region);
  auto grads_region = context_.registerMemory(grads_.data(), model_bytes_);
  if (!grads_region) return grads_region.status().withContext(fmt::format("worker {}: gradients", worker_));
  grads_region_ = std::move(*grads_region);
  POSEIDON_RETURN_IF_ERROR(publishWorkerRegion(store, job_, worker_, *params_region_));
  auto servers = fetchServerRegions(store, job_, deadline);
  if (!servers) return servers.status();
  servers_ = std::move(*servers);
  auto resume = agreeResumeClock(store, job_, deadline);
  if (!resume) return resume.status();
  start_clock_ = *resume;
  for (ChunkTrack& chunk : chunks_) chunk.pushes = chunk.version = start_clock_;
  unacked_bytes_.assign(static_cast<size_t>(job_.servers), 0);
  pongs_.assign(static_cast<size_t>(job_.servers), kNoPong);
  checkpoint_commits_ = CheckpointCommits(job_.servers, start_clock_);
  held_.resize(static_cast<size_t>(job_.servers));
  for (const Shard& shard : shards) held_[static_cast<size_t>(shard.server)].reserve(shard.chunks.size());
  for (LayerTrack& layer : layers_) layer.clock = start_clock_;
  for (int server = 0; server < job_.servers; ++server) {
    threads_.emplace_back([this, server] { serverLoop(server); });
    if (priority_) signal(server, ToServer::kAnnounce, 0, 0);
  }
  return Status::ok();
}

Status ClientImpl::initialize(Deadline deadline) {
  if (worker_ != 0 || start_clock_ > 0) return Status::ok();
  std::vector<RequestPtr> writes;
  for (const ChunkTrack& chunk : chunks_) {
    transport::Pair& pair = context_.pair(job_.serverRank(chunk.server));
    writes.push_back(pair.write(*params_region_, chunk.model_offset, servers_[static_cast<size_t>(chunk.server)].params,
                                chunk.shard_offset, chunk.bytes,
                                encodeImm(static_cast<uint8_t>(ToServer::kInit), chunk.local, 0)));
  }
  const Status status = transport::waitAll(writes, deadline);
  if (status.isOk()) return status;
  // A broken write only says the connection closed; the server's last words (a worker it lost)
  // arrive through serverLoop, which records them as the failure, so give it a moment.
  std::unique_lock lock(mutex_);
  failure_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return !failure_.isOk(); });
  return failure_.isOk() ? status : failure_;
}

RequestPtr ClientImpl::push(size_t layer) {
  std::lock_guard lock(mutex_);
  if (layer >= layers_.size()) {
    return transport::failedRequest("push",
                                    makeStatus(StatusCode::kInvalidArgument, "layer {} of {}", layer, layers_.size()));
  }
  RequestPtr request = newRequest("push", layer);
  if (!failure_.isOk()) {
    request->complete(failure_);
    return request;
  }
  LayerTrack& track = layers_[layer];
  const uint64_t clock = track.clock++;
  if (!accumulated_.empty()) {
    // Downpour's n_push: gradients add up locally and travel every n_push clocks, from the
    // gradient buffer the trainer already waits on.
    const bool send = (clock + 1) % consistency_.n_push == 0;
    for (const auto& [offset, bytes] : track.ranges) {
      float* grads = grads_.data() + offset / sizeof(float);
      float* sum = accumulated_.data() + offset / sizeof(float);
      for (size_t i = 0; i < bytes / sizeof(float); ++i) {
        if (send) {
          grads[i] += sum[i];
          sum[i] = 0.0f;
        } else {
          sum[i] += grads[i];
        }
      }
    }
    if (!send) {
      request->complete(Status::ok());
      return request;
    }
  }
  const OpPtr op = newOp(request, track.chunks.size());
  for (uint32_t c : track.chunks) {
    ChunkTrack& chunk = chunks_[c];
    chunk.push_ops.push_back(op);
    if (++chunk.push_ready == chunk.layers && !chunk.awaiting_ack) queuePushLocked(c);
  }
  for (int server = 0; server < job_.servers; ++server) drainPushesLocked(server);
  return request;
}

void ClientImpl::queuePushLocked(uint32_t c) {
  ChunkTrack& chunk = chunks_[c];
  if (chunk.queued) return;
  if (chunk.awaited == chunk.pushes) {
    // Others sent it and wait for ours: reordered windows could otherwise each hold what the
    // other waits for (FIFO cannot: every worker sends in the order its layers became ready).
    unacked_bytes_[static_cast<size_t>(chunk.server)] += chunk.bytes;
    sendPushLocked(c);
    return;
  }
  chunk.queued = true;
  held_[static_cast<size_t>(chunk.server)].hold(priority_ ? uint64_t{c} : 0, c);
}

void ClientImpl::drainPushesLocked(int server) {
  // Without a window the fast workers fill their slots far ahead of the slowest one (TCP shares
  // a server's link unevenly), the server idles, then drains a backlog: acks pace the pushes.
  held_[static_cast<size_t>(server)].release(
      unacked_bytes_[static_cast<size_t>(server)], push_window_bytes_, [&](uint32_t c) { return chunks_[c].bytes; },
      [&](uint32_t c) {
        chunks_[c].queued = false;
        sendPushLocked(c);
      });
}

void ClientImpl::sendPushLocked(uint32_t c) {
  ChunkTrack& chunk = chunks_[c];
  chunk.push_ready = 0;
  chunk.awaiting_ack = true;
  chunk.ack_ops = std::move(chunk.push_ops);
  chunk.push_ops.clear();
  ++chunk.pushes;
  for (const OpPtr& op : chunk.ack_ops) op->bytes += chunk.bytes;
  transport::Pair& pair = context_.pair(job_.serverRank(chunk.server));
  // Failures surface as the connection's failure in serverLoop.
  (void)pair.write(*grads_region_, chunk.model_offset, servers_[static_cast<size_t>(chunk.server)].slots,
                   chunk.slot_offset, chunk.bytes, encodeImm(static_cast<uint8_t>(ToServer::kPush), chunk.local, 0));
  if (consistency_.mode == Consistency::Mode::kBsp &&
      (chunk.pulls.empty() || chunk.pulls.back().min_version < chunk.pushes)) {
    // BSP knows the next version now: ask for it right behind the gradient, so the server sends
    // it the moment it exists instead of when pull() is called (behind every later push).
    chunk.pulls.push_back({chunk.pushes, {}, false});
  }
  flushPullsLocked(c);
}

RequestPtr ClientImpl::pull(size_t layer) {
  uint64_t clock = 0;
  {
    std::lock_guard lock(mutex_);
    if (layer < layers_.size()) clock = layers_[layer].clock;
  }
  return pull(layer, consistency_.minVersion(clock));
}

RequestPtr ClientImpl::pull(size_t layer, uint64_t min_version) {
  std::lock_guard lock(mutex_);
  if (layer >= layers_.size()) {
    return transport::failedRequest("pull",
                                    makeStatus(StatusCode::kInvalidArgument, "layer {} of {}", layer, layers_.size()));
  }
  RequestPtr request = newRequest("pull", layer);
  LayerTrack& track = layers_[layer];
  if (min_version > track.clock) {
    request->complete(makeStatus(StatusCode::kInvalidArgument,
                                 "{}: version {} needs pushes this layer has not made (it is at clock {})",
                                 request->what(), min_version, track.clock));
    return request;
  }
  if (!failure_.isOk()) {
    request->complete(failure_);
    return request;
  }
  if (consistency_.mode == Consistency::Mode::kAsync && track.clock > start_clock_ &&
      track.clock % consistency_.n_fetch != 0) {
    request->complete(Status::ok());  // Downpour's n_fetch: keep the parameters we have
    return request;
  }
  const OpPtr op = newOp(request, track.chunks.size());
  for (uint32_t c : track.chunks) {
    ChunkTrack& chunk = chunks_[c];
    chunk.pull_ops.push_back(op);
    chunk.pull_min = std::max(chunk.pull_min, min_version);
    if (++chunk.pull_ready == chunk.layers) sendPullLocked(c);
  }
  return request;
}

void ClientImpl::sendPullLocked(uint32_t c) {
  ChunkTrack& chunk = chunks_[c];
  std::vector<OpPtr> ops = std::move(chunk.pull_ops);
  chunk.pull_ops.clear();
  chunk.pull_ready = 0;
  const uint64_t min_version = chunk.pull_min;
  chunk.pull_min = 0;
  if (consistency_.mode == Consistency::Mode::kBsp) {
    // BSP's version is exact, so what is here or already asked for serves (see sendPushLocked).
    if (chunk.pulls.empty() && chunk.received && chunk.version >= min_version) {
      for (const OpPtr& op : ops) finishOne(op);
      return;
    }
    for (PullInFlight& pull : chunk.pulls) {
      if (pull.min_version >= min_version) {
        pull.ops.insert(pull.ops.end(), ops.begin(), ops.end());
        return;
      }
    }
  }
  chunk.pulls.push_back({min_version, std::move(ops), false});
  flushPullsLocked(c);
}

void ClientImpl::flushPullsLocked(uint32_t c) {
  // The server widens a pull's version against the pushes it has seen from us, so a pull goes
  // only after every push its version needs (one may still wait for an ack), in order.
  ChunkTrack& chunk = chunks_[c];
  for (PullInFlight& pull : chunk.pulls) {
    if (pull.sent) continue;
    if (pull.min_version > chunk.pushes) return;
    signal(chunk.server, ToServer::kPull, chunk.local, pull.min_version);
    pull.sent = true;
  }
}

void ClientImpl::signal(int server, ToServer type, uint32_t chunk, uint64_t value) {
  signalImm(server, encodeImm(static_cast<uint8_t>(type), chunk, value));
}

void ClientImpl::signalImm(int server, uint32_t imm) {
  (void)context_.pair(job_.serverRank(server))
      .write(*params_region_, 0, servers_[static_cast<size_t>(server)].params, 0, 0, imm);
}

void ClientImpl::serverLoop(int server) {
  transport::Pair& pair = context_.pair(job_.serverRank(server));
  RequestPtr next = pair.recvImm();
  while (!stopping_.load()) {
    (void)next->wait(Deadline::after(kClientStopPoll));
    if (!next->test()) continue;  // it may complete between the timeout and this look
    Status status = next->status();
    if (status.isOk()) {
      const Imm imm = decodeImm(next->imm());
      next = pair.recvImm();
      std::lock_guard lock(mutex_);
      status = handle(server, imm);
      if (status.isOk()) continue;
    }
    if (stopping_.load() || saying_bye_.load()) return;
    {
      std::lock_guard lock(mutex_);
      failAllLocked(
          makeStatus(status.code(), "server {} (rank {}): {}", server, job_.serverRank(server), status.message()));
    }
    tellOtherServersWhyWeLeave(server);
    return;
  }
}

void ClientImpl::tellOtherServersWhyWeLeave(int lost) {
  if (told_why_we_leave_.exchange(true)) return;  // once, naming the first server lost
  std::vector<RequestPtr> notices;
  for (int server = 0; server < job_.servers; ++server) {
    if (server == lost) continue;
    notices.push_back(context_.pair(job_.serverRank(server))
                          .write(*params_region_, 0, servers_[static_cast<size_t>(server)].params, 0, 0,
                                 encodeImm(static_cast<uint8_t>(ToServer::kBye), 0, static_cast<uint64_t>(lost) + 1)));
  }
  // Out before this worker's connections close, as far as the servers can take them; a notice that
  // cannot go (that server is gone too) changes nothing.
  (void)transport::waitAll(notices, Deadline::after(kLeavingNoticeWait));
}

Status ClientImpl::handle(int server, const Imm& imm) {
  if (imm.type == static_cast<uint8_t>(ToWorker::kPong)) {
    pongs_[static_cast<size_t>(server)] = imm.value;
    pong_cv_.notify_all();
    return Status::ok();
  }
  if (imm.type == static_cast<uint8_t>(ToWorker::kCheckpointOutcome)) return onCheckpointOutcomeLocked(server, imm);
  if (imm.type == static_cast<uint8_t>(ToWorker::kServerFailed)) {
    if (imm.value >= static_cast<uint32_t>(job_.servers)) {
      return makeStatus(StatusCode::kProtocolError, "reported server {} gone, but the job has servers 0..{}", imm.value,
                        job_.servers - 1);
    }
    failAllLocked(makeStatus(StatusCode::kConnectionError, "server {} (rank {}) is gone, reported by server {}",
                             imm.value, job_.serverRank(static_cast<int>(imm.value)), server));
    return Status::ok();
  }
  const uint32_t c = globalChunk(server, imm.chunk);
  if (c >= chunks_.size()) {
    return makeStatus(StatusCode::kProtocolError, "named its chunk {} (global {}) but the model has {} chunks",
                      imm.chunk, c, chunks_.size());
  }
  ChunkTrack& chunk = chunks_[c];
  switch (static_cast<ToWorker>(imm.type)) {
    case ToWorker::kAck: {
      if (!chunk.awaiting_ack) return makeStatus(StatusCode::kProtocolError, "acknowledged chunk {} unasked", c);
      chunk.awaiting_ack = false;
      for (const OpPtr& op : chunk.ack_ops) finishOne(op);
      chunk.ack_ops.clear();
      chunk.blocker = -1;
      unacked_bytes_[static_cast<size_t>(server)] -= chunk.bytes;
      if (chunk.push_ready == chunk.layers && chunk.layers > 0) queuePushLocked(c);
      drainPushesLocked(server);
      return Status::ok();
    }
    case ToWorker::kParams: {
      if (chunk.pulls.empty() || !chunk.pulls.front().sent) {
        return makeStatus(StatusCode::kProtocolError, "sent chunk {} unasked", c);
      }
      PullInFlight pull = std::move(chunk.pulls.front());
      chunk.pulls.pop_front();
      const uint64_t version = widenAtMost(chunk.pushes, imm.value);
      if (consistency_.mode != Consistency::Mode::kAsync && (version < pull.min_version || version > chunk.pushes)) {
        return makeStatus(StatusCode::kProtocolError, "sent chunk {} at version {} (low bits) for a pull of >= {}", c,
                          imm.value, pull.min_version);
      }
      chunk.version = version;
      chunk.received = true;
      failure_cv_.notify_all();  // finish() waits for sent pulls to be answered
      chunk.blocker = -1;
      for (const OpPtr& op : pull.ops) {
        op->bytes += chunk.bytes;
        finishOne(op);
      }
      return Status::ok();
    }
    case ToWorker::kBlocked: chunk.blocker = static_cast<int>(imm.value); return Status::ok();
    case ToWorker::kAwaited: {
      if (!priority_) return makeStatus(StatusCode::kProtocolError, "announced chunk {} unasked", c);
      // For our next push (the clock of pushes made), or one we made since (then stale).
      if (widenAtMost(chunk.pushes, imm.value) != chunk.pushes) return Status::ok();
      chunk.awaited = chunk.pushes;
      if (!chunk.queued) return Status::ok();             // not ready yet, or awaiting the previous ack
      (void)held_[static_cast<size_t>(server)].erase(c);  // held while queued
      chunk.queued = false;
      queuePushLocked(c);
      return Status::ok();
    }
    case ToWorker::kWorkerFailed:
      if (imm.value >= static_cast<uint32_t>(job_.workers)) {
        return makeStatus(StatusCode::kProtocolError, "reported worker {} gone, but the job has workers 0..{}",
                          imm.value, job_.workers - 1);
      }
      failAllLocked(makeStatus(StatusCode::kConnectionError, "worker {} (rank {}) is gone, reported by server {}",
                               imm.value, job_.workerRank(static_cast<int>(imm.value)), server));
      return Status::ok();
    case ToWorker::kPong:
    case ToWorker::kCheckpointOutcome:
    case ToWorker::kServerFailed: break;  // handled above
  }
  return makeStatus(StatusCode::kProtocolError, "sent immediate type {} (expected 0..7)", imm.type);
}

void ClientImpl::failAllLocked(const Status& status) {
  if (failure_.isOk()) failure_ = status;
  failure_cv_.notify_all();
  for (ChunkTrack& chunk : chunks_) {
    for (auto* ops : {&chunk.push_ops, &chunk.ack_ops, &chunk.pull_ops}) {
      for (const OpPtr& op : *ops) op->request->complete(failure_);
      ops->clear();
    }
    for (PullInFlight& pull : chunk.pulls) {
      for (const OpPtr& op : pull.ops) op->request->complete(failure_);
    }
    chunk.pulls.clear();
  }
}

Status ClientImpl::wait(const RequestPtr& request, Deadline deadline) {
  Status status = request->wait(deadline);
  if (request->test()) return request->status();  // also when it finished just after the timeout
  if (status.code() != StatusCode::kTimeout) return status;
  std::unique_lock lock(mutex_);
  // What a server last reported may be stale: a stopped server's "waits for worker 1" blames a
  // worker that pushed long ago, and a live one's blocker may have pushed since it reported. So
  // ask each server a pending chunk waits on: a live one answers with fresh reports (kBlocked),
  // then kPong; one that does not answer is named first, as the likely cause.
  std::vector<int> servers;
  for (const ChunkTrack& chunk : chunks_) {
    const bool on_server = !chunk.pulls.empty() || chunk.awaiting_ack;
    if (on_server && std::find(servers.begin(), servers.end(), chunk.server) == servers.end()) {
      servers.push_back(chunk.server);
    }
  }
  const std::vector<int> silent = unansweredPingsLocked(lock, servers);
  if (request->test()) return request->status();  // it finished while the pings were out
  std::vector<std::string> causes;
  for (int server : silent) {
    causes.push_back(fmt::format("server {} (rank {}) did not answer a ping within {} ms: stopped, hung or cut off",
                                 server, job_.serverRank(server), kPingWait.count()));
  }
  size_t waits = 0;
  for (size_t c = 0; c < chunks_.size() && waits < 4; ++c) {
    const ChunkTrack& chunk = chunks_[c];
    const bool fresh = std::find(silent.begin(), silent.end(), chunk.server) == silent.end();
    if (!chunk.pulls.empty()) {
      causes.push_back(chunk.blocker >= 0
                           ? fmt::format("chunk {} on server {} waits for worker {} ({})", c, chunk.server,
                                         chunk.blocker, fresh ? "the server's answer now" : "the server's last report")
                           : fmt::format("chunk {} on server {} not answered", c, chunk.server));
    } else if (chunk.awaiting_ack) {
      causes.push_back(fmt::format("chunk {} on server {} not acknowledged", c, chunk.server));
    } else if (chunk.push_ready > 0 || chunk.pull_ready > 0) {
      causes.push_back(fmt::format("chunk {} waits for its other layers to call", c));
    } else {
      continue;
    }
    ++waits;
  }
  return makeStatus(StatusCode::kTimeout, "{}: {}", status.message(),
                    causes.empty() ? std::string("nothing pending") : fmt::format("{}", fmt::join(causes, "; ")));
}

std::vector<int> ClientImpl::unansweredPingsLocked(std::unique_lock<std::mutex>& lock,
                                                   const std::vector<int>& servers) {
  if (servers.empty()) return {};
  const uint32_t ping = next_ping_++ & kImmValueMask;
  lock.unlock();
  for (int server : servers) signal(server, ToServer::kPing, 0, ping);
  lock.lock();
  // Pings go out in order and each server answers in order, so any pong from ours onwards (another
  // thread may have pinged since, and its pong overwritten ours) proves the server alive.
  auto answered = [&](int server) {
    const uint32_t pong = pongs_[static_cast<size_t>(server)];
    return pong != kNoPong && ((pong - ping) & kImmValueMask) < ((next_ping_ - ping) & kImmValueMask);
  };
  pong_cv_.wait_for(lock, kPingWait, [&] { return std::all_of(servers.begin(), servers.end(), answered); });
  std::vector<int> silent;
  for (int server : servers) {
    if (!answered(server)) silent.push_back(server);
  }
  return silent;
}

uint64_t ClientImpl::version(size_t layer) const {
  std::lock_guard lock(mutex_);
  uint64_t lowest = UINT64_MAX;
  for (uint32_t c : layers_.at(layer).chunks) lowest = std::min(lowest, chunks_[c].version);
  return lowest == UINT64_MAX ? 0 : lowest;
}

Status ClientImpl::onCheckpointOutcomeLocked(int server, const Imm& imm) {
  const CheckpointNotice notice = decodeCheckpointNotice(imm, kOutcomeCodeBits);
  if (notice.code > kLastCheckpointOutcome) {
    return makeStatus(StatusCode::kProtocolError, "told checkpoint outcome {} (expected 0 to {})", notice.code,
                      kLastCheckpointOutcome);
  }
  const auto outcome = static_cast<CheckpointOutcome>(notice.code);
  std::string clock;
  if (outcome == CheckpointOutcome::kNoDirectory) {
    // The answer to this worker's request: its low bits only, and no checkpointer behind it.
    clock = fmt::format("asked at clock {} mod {}", notice.clock_low & kImmValueMask, kImmValueWindow);
  } else {
    const CheckpointCommits::Heard heard = checkpoint_commits_.onOutcome(
        server, notice.clock_low, noticeClockBits(kOutcomeCodeBits), outcome == CheckpointOutcome::kWritten);
    // Said to every server, in this order (a commit before the passing that would drop it). Once
    // this worker said goodbye the servers no longer read from it; the others still say it.
    if (!saying_bye_.load()) {
      if (heard.committed) settleLocked(CheckpointSettled::kCommitted, *heard.committed);
      if (heard.passed_by_all) settleLocked(CheckpointSettled::kPassedByAll, *heard.passed_by_all);
    }
    if (outcome == CheckpointOutcome::kWritten) return Status::ok();
    clock = fmt::format("clock {}", heard.clock);
  }
  std::string why;
  switch (outcome) {
    case CheckpointOutcome::kNoDirectory:
      why = "it has no checkpoint directory (start it with one: --checkpoint-dir)";
      break;
    case CheckpointOutcome::kWriteFailed:
      why = "writing the file failed (its log says why: a full disk, permissions)";
      break;
    case CheckpointOutcome::kDiskBehind:
      why =
          "its disk was still writing the checkpoints before it, so it skipped this one (and any others since it "
          "last said so) to bound its memory; checkpoint less often or give it a faster disk";
      break;
    case CheckpointOutcome::kAwaitingServers:
      why =
          "it holds checkpoint_keep checkpoints that not every server has passed yet, so it skipped this one (and "
          "any others since it last said so) to bound its disk; another server's disk is behind or failing (the "
          "servers' logs say which): raise checkpoint_keep or checkpoint less often";
      break;
    case CheckpointOutcome::kPassedOver:
      why =
          "a lost worker was left out and its chunks' clocks moved past this one at once (async), so no state of it "
          "exists";
      break;
    case CheckpointOutcome::kWritten: break;
  }
  Status refusal = makeStatus(StatusCode::kUnavailable, "server {} (rank {}) did not checkpoint ({}): {}", server,
                              job_.serverRank(server), clock, why);
  spdlog::warn("{}", refusal.message());
  if (checkpoint_refusal_.isOk()) checkpoint_refusal_ = std::move(refusal);
  return Status::ok();
}

void ClientImpl::settleLocked(CheckpointSettled what, uint64_t clock) {
  const uint32_t imm = encodeCheckpointNotice(static_cast<uint8_t>(ToServer::kCheckpointSettled),
                                              static_cast<uint32_t>(what), kSettledCodeBits, clock);
  for (int server = 0; server < job_.servers; ++server) signalImm(server, imm);
}

Status ClientImpl::requestCheckpoint(uint64_t clock) {
  std::lock_guard lock(mutex_);
  if (!failure_.isOk()) return failure_;
  for (int server = 0; server < job_.servers; ++server) signal(server, ToServer::kCheckpoint, 0, clock);
  // This one is asked for all the same; an earlier one a server refused is said once, here, to
  // the caller that can act on it.
  return std::exchange(checkpoint_refusal_, Status::ok());
}

Status ClientImpl::waitForSentPulls(Deadline deadline) {
  // BSP's early pulls (sent behind each push; no request waits on them) are answered right after
  // the acks, and their parameters land in the caller's memory: once finish() returns nothing may
  // write there any more (TSan saw a late answer land while the caller read allParameters()).
  const auto sent = [](const ChunkTrack& chunk) {
    return std::any_of(chunk.pulls.begin(), chunk.pulls.end(), [](const PullInFlight& pull) { return pull.sent; });
  };
  std::unique_lock lock(mutex_);
  const bool settled = waitWithDeadline(failure_cv_, lock, deadline, [&] {
    return !failure_.isOk() || std::none_of(chunks_.begin(), chunks_.end(), sent);
  });
  if (!failure_.isOk()) return failure_;
  if (settled) return Status::ok();
  return makeStatus(StatusCode::kTimeout,
                    "worker {}: finish() waited for the servers' answers to pulls already sent until its deadline",
                    worker_);
}

Status ClientImpl::finish(Deadline deadline) {
  std::vector<RequestPtr> pending;
  {
    std::lock_guard lock(mutex_);
    if (!failure_.isOk()) return failure_;
    // A pull whose layer shares a chunk with a layer that has not pulled cannot complete: the
    // chunk is asked for once all its layers ask (pull()). Waiting for it would hang until the
    // deadline, and only when its other chunks' answers were still on the way (PsFeatures.
    // APullThatTimesOutNamesTheWorkerItWaitsFor, 1 run in 12). Those answers are still waited
    // for below (waitForSentPulls), so nothing lands in the caller's memory after finish().
    std::vector<const Op*> unasked;
    for (const ChunkTrack& chunk : chunks_) {
      for (const OpPtr& op : chunk.pull_ops) unasked.push_back(op.get());
    }
    std::sort(unasked.begin(), unasked.end());
    for (const ChunkTrack& chunk : chunks_) {
      for (const OpPtr& op : chunk.ack_ops) pending.push_back(op->request);
      for (const PullInFlight& pull : chunk.pulls) {
        for (const OpPtr& op : pull.ops) {
          if (!std::binary_search(unasked.begin(), unasked.end(), op.get())) pending.push_back(op->request);
        }
      }
    }
  }
  POSEIDON_RETURN_IF_ERROR(transport::waitAll(pending, deadline));
  POSEIDON_RETURN_IF_ERROR(waitForSentPulls(deadline));
  // Every answer is in: from here a server's connection closing is the job ending. A kBye that
  // cannot go still fails finish() below.
  saying_bye_.store(true);
  std::vector<RequestPtr> byes;
  for (int server = 0; server < job_.servers; ++server) {
    byes.push_back(context_.pair(job_.serverRank(server))
                       .write(*params_region_, 0, servers_[static_cast<size_t>(server)].params, 0, 0,
                              encodeImm(static_cast<uint8_t>(ToServer::kBye), 0, 0)));
  }
  POSEIDON_RETURN_IF_ERROR(transport::waitAll(byes, deadline));
  stopping_.store(true);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::start(transport::Context& context, transport::bootstrap::Store& store,
                                              const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                              const Consistency& consistency, Deadline deadline) {
  ClientOptions options;
  options.consistency = consistency;
  return start(context, store, model, layout, job, options, deadline);
}

Result<std::unique_ptr<Client>> Client::start(transport::Context& context, transport::bootstrap::Store& store,
                                              const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                              const ClientOptions& options, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(job.validate(context));
  POSEIDON_RETURN_IF_ERROR(options.consistency.validate());
  POSEIDON_RETURN_IF_ERROR(model.validate());
  if (context.rank() >= job.workers) {
    return makeStatus(StatusCode::kInvalidArgument, "rank {} is not a worker rank of the PS job ({} workers)",
                      context.rank(), job.workers);
  }
  POSEIDON_RETURN_IF_ERROR(
      agreeOnPsJob(store, job, context.rank(), model, layout, options.consistency, nullptr, deadline));
  // Before any wait on the servers: they wait for it to agree on the clock to resume from.
  POSEIDON_RETURN_IF_ERROR(publishWorkerResumeClocks(store, job, context.rank(), options.resumable_clocks));
  auto client = std::make_unique<ClientImpl>(context, job, options);
  POSEIDON_RETURN_IF_ERROR(client->setUp(store, model, layout, deadline));
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace poseidon::ps
