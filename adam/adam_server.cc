#include "adam/adam_server.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "adam/adam_protocol.h"
#include "common/deadline_wait.h"
#include "kernels/sf_bias.h"
#include "kernels/sf_update.h"

namespace poseidon::adam {

using transport::RequestPtr;

Status reconstructAdamGradient(const model::Layer& layer, uint64_t batch, std::span<const float* const> u,
                               std::span<const float* const> v, std::span<float> g) {
  const model::FcShape& fc = layer.fc();
  if (!layer.isFullyConnected() || g.size() != layer.params()) {
    return makeStatus(StatusCode::kInternal, "Adam gradient of {} layer '{}' has {} floats; expected {} x {}{}",
                      model::layerKindName(layer.kind()), layer.name(), g.size(), fc.rows, fc.cols,
                      fc.bias ? " + the bias" : "");
  }
  // The fused kernel accumulates exactly the rank-order FMA sum, then applies an optimizer step.
  // SGD with lr = -1, no scaling and no decay onto W = -0 leaves that sum untouched:
  //   w = w0 - lr * (g * 1 + 0 * w0) = -0 - (-1 * (g + -0)) = g,
  // every operation exact. Starting from -0 rather than +0 keeps the sign of a zero g too
  // (g + +0 would turn -0 into +0); tests/sfb/adam_scheme_test.cc checks it bit for bit.
  const size_t weight = static_cast<size_t>(fc.rows * fc.cols);
  std::fill(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(weight), -0.0f);
  kernels::SfUpdate update;
  update.params = g.data();
  update.rows = static_cast<size_t>(fc.rows);
  update.cols = static_cast<size_t>(fc.cols);
  update.rank = static_cast<size_t>(batch);
  update.u = u;
  update.v = v;
  update.step.kind = kernels::OptimizerKind::kSgd;
  update.step.lr = -1.0f;
  update.step.grad_scale = 1.0f;
  update.step.weight_decay = 0.0f;
  update.step.momentum = 0.0f;
  update.method = kernels::SfMethod::kExact;
  try {
    kernels::sfUpdateCpu(update);
  } catch (const std::exception& e) {
    return makeStatus(StatusCode::kInternal, "Adam reconstruction of '{}': {}", layer.name(), e.what());
  }
  // The bias from the workers' U row sums, in the order SFB uses: the same bits on every scheme.
  if (fc.bias) kernels::sfBiasGradient(update.rows, update.rank, u, g.data() + weight);
  return Status::ok();
}

namespace {

// How long a peer thread sleeps in one wait before it looks whether the server stops.
constexpr auto kPoll = std::chrono::milliseconds(200);
// How often a worker's thread looks for late iterations to report to that worker.
constexpr auto kStallCheckEvery = std::chrono::milliseconds(50);
// Bound on the writes still finishing when the server is destroyed.
constexpr auto kDrainAtExit = std::chrono::seconds(5);

enum class WorkerState : uint8_t { kActive, kDone, kFailed };

struct ServerLayerState {
  std::mutex mutex;
  uint64_t done = 0;                  // iterations completed: G of done - 1 was sent
  int arrived = 0;                    // pushes of iteration `done` in the slots
  std::vector<uint64_t> pushed;       // per worker: pushes received
  Clock::time_point first_arrival{};  // of iteration `done`'s first push
  std::vector<int> told;              // per worker: the laggard it was last told of (-1: none)
  std::vector<RequestPtr> writes;     // per worker: the write of the last G
  std::vector<const float*> u;        // per worker: its U in the slots (fixed addresses)
  std::vector<const float*> v;        // per worker: its V
  scheme::Traffic traffic;
};

class AdamServerImpl final : public AdamServer {
 public:
  AdamServerImpl(transport::Context& context, AdamLayout layout, const AdamServerOptions& options)
      : context_(context),
        layout_(std::move(layout)),
        options_(options),
        server_(context.rank() - layout_.workers()),
        held_(layout_.layersOf(server_)),
        states_(held_.size()),
        worker_states_(static_cast<size_t>(layout_.workers())) {
    for (auto& state : worker_states_) state.store(WorkerState::kActive);
  }

  ~AdamServerImpl() override {
    stopping_.store(true);
    for (std::thread& thread : threads_) thread.join();
    // Regions must outlive the writes reading them.
    const Deadline drain = Deadline::after(kDrainAtExit);
    for (ServerLayerState& state : states_) {
      for (const RequestPtr& write : state.writes) {
        if (write) (void)write->wait(drain);
      }
    }
    for (const RequestPtr& write : notice_writes_) (void)write->wait(drain);
  }

  Status setUp(transport::bootstrap::Store& store, Deadline deadline);

  Status waitUntilDone(Deadline deadline) override {
    std::unique_lock lock(done_mutex_);
    // A failure ends the wait at once: no iteration can complete after it.
    if (waitWithDeadline(done_cv_, lock, deadline, [&] { return running_workers_ == 0 || !failure_.isOk(); })) {
      return failure_;
    }
    std::vector<int> connected;
    for (int w = 0; w < layout_.workers(); ++w) {
      if (worker_states_[static_cast<size_t>(w)].load() == WorkerState::kActive) connected.push_back(w);
    }
    return makeStatus(StatusCode::kTimeout, "Adam server {} (rank {}): workers {} had not said goodbye by the deadline",
                      server_, context_.rank(), fmt::join(connected, ", "));
  }

  int server() const override { return server_; }
  const AdamLayout& layout() const override { return layout_; }

  uint64_t iterations(size_t l) const override {
    if (!holds(l)) return 0;
    ServerLayerState& state = stateOf(l);
    std::lock_guard lock(state.mutex);
    return state.done;
  }

  std::span<const float> gradient(size_t l) const override {
    if (!holds(l)) return {};
    return {gradients_.data() + gradient_offsets_[local(l)], layout_.gradientFloats(l)};
  }

  scheme::Traffic traffic(size_t l) const override {
    if (!holds(l)) return {};
    ServerLayerState& state = stateOf(l);
    std::lock_guard lock(state.mutex);
    return state.traffic;
  }

 private:
  bool holds(size_t l) const { return l < layout_.layerCount() && layout_.serverOf(l) == server_; }
  size_t local(size_t l) const { return l / static_cast<size_t>(layout_.servers()); }
  ServerLayerState& stateOf(size_t l) const { return states_[local(l)]; }
  std::string workerName(int w) { return fmt::format("worker {} ({})", w, context_.pair(w).peerName()); }

  void serveWorker(int worker);
  void watchPeer(int rank);
  Status onPush(int worker, uint32_t raw);
  Status completeLocked(size_t l, ServerLayerState& state);
  Status onBye(int worker);
  void reportStalls(int worker);
  int departedWorker() const;
  void fail(int culprit, const Status& why);

  transport::Context& context_;
  const AdamLayout layout_;
  const AdamServerOptions options_;
  const int server_;
  const std::vector<size_t> held_;  // the layers this server holds, ascending
  mutable std::vector<ServerLayerState> states_;
  std::vector<std::atomic<WorkerState>> worker_states_;

  // Buffers before their regions, so the regions are deregistered first.
  std::vector<float> slots_;
  std::vector<float> gradients_;
  std::vector<size_t> gradient_offsets_;  // per held layer, in gradients_
  std::vector<uint8_t> notice_;
  std::unique_ptr<transport::MemoryRegion> slots_region_;
  std::unique_ptr<transport::MemoryRegion> gradients_region_;
  std::unique_ptr<transport::MemoryRegion> notice_region_;
  std::vector<AdamWorkerRegions> workers_;

  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failed_{false};
  std::vector<RequestPtr> notice_writes_;  // written only by the one failing thread
  std::mutex done_mutex_;
  std::condition_variable done_cv_;
  int running_workers_ = 0;
  Status failure_;
};

Status AdamServerImpl::setUp(transport::bootstrap::Store& store, Deadline deadline) {
  size_t gradient_floats = 0;
  for (size_t l : held_) {
    gradient_offsets_.push_back(gradient_floats);
    gradient_floats += layout_.gradientFloats(l);
  }
  // A server without layers (more servers than layers) still registers a float so descriptors exist.
  slots_.assign(std::max<size_t>(1, layout_.slotTotal(server_)), 0.0f);
  gradients_.assign(std::max<size_t>(1, gradient_floats), 0.0f);
  notice_.assign(kAdamNoticeBytes, 0);
  const auto registered = [&](auto& buffer, std::unique_ptr<transport::MemoryRegion>& region, const char* what) {
    auto made = context_.registerMemory(buffer.data(), buffer.size() * sizeof(buffer[0]));
    if (!made) return made.status().withContext(fmt::format("Adam server {}: {} buffer", server_, what));
    region = std::move(*made);
    return Status::ok();
  };
  POSEIDON_RETURN_IF_ERROR(registered(slots_, slots_region_, "slot"));
  POSEIDON_RETURN_IF_ERROR(registered(gradients_, gradients_region_, "gradient"));
  POSEIDON_RETURN_IF_ERROR(registered(notice_, notice_region_, "notice"));

  const size_t workers = static_cast<size_t>(layout_.workers());
  for (size_t i = 0; i < held_.size(); ++i) {
    ServerLayerState& state = states_[i];
    state.pushed.assign(workers, 0);
    state.told.assign(workers, -1);
    state.writes.assign(workers, nullptr);
    for (int p = 0; p < layout_.workers(); ++p) {
      state.u.push_back(slots_.data() + layout_.slotOffset(held_[i], p));
      state.v.push_back(state.u.back() + layout_.uFloats(held_[i]));
    }
  }
  POSEIDON_RETURN_IF_ERROR(publishAdamServer(store, context_.name(), server_, layout_, *slots_region_));
  auto regions = fetchAdamWorkers(store, context_.name(), layout_, deadline);
  if (!regions) return regions.status().withContext(fmt::format("Adam server {}", server_));
  workers_ = std::move(*regions);

  running_workers_ = layout_.workers();
  for (int rank = 0; rank < context_.size(); ++rank) {
    if (rank == context_.rank()) continue;
    if (rank < layout_.workers()) {
      threads_.emplace_back([this, rank] { serveWorker(rank); });
    } else {
      threads_.emplace_back([this, rank] { watchPeer(rank); });
    }
  }
  return Status::ok();
}

void AdamServerImpl::serveWorker(int worker) {
  transport::Pair& pair = context_.pair(worker);
  RequestPtr next = pair.recvImm();
  auto stalls_checked = Clock::now();
  while (!stopping_.load() && !failed_.load()) {
    (void)next->wait(Deadline::after(kPoll));
    if (Clock::now() - stalls_checked >= kStallCheckEvery) {
      reportStalls(worker);
      stalls_checked = Clock::now();
    }
    if (!next->test()) continue;  // it may complete between the timeout and this look
    if (!next->status().isOk()) {
      fail(worker, makeStatus(StatusCode::kConnectionError, "Adam server {}: {} is gone: {}", server_,
                              workerName(worker), next->status().toString()));
      return;
    }
    const uint32_t raw = next->imm();
    if (AdamImm::decode(raw).type == static_cast<uint8_t>(AdamToServer::kBye)) {
      if (Status status = onBye(worker); !status.isOk()) fail(worker, status);
      return;
    }
    next = pair.recvImm();  // posted before the work so the backend can queue the next one
    if (Status status = onPush(worker, raw); !status.isOk()) {
      fail(worker, status);
      return;
    }
  }
}

void AdamServerImpl::watchPeer(int rank) {
  // Only workers write to a server; listening to the other ranks is how a stray write is caught
  // (it may have landed in the slots, so nothing computed from them could be trusted after it).
  transport::Pair& pair = context_.pair(rank);
  RequestPtr next = pair.recvImm();
  while (!stopping_.load() && !failed_.load()) {
    (void)next->wait(Deadline::after(kPoll));
    if (!next->test()) continue;
    if (!next->status().isOk()) return;  // another server's connection is not this server's business
    fail(-1, makeStatus(StatusCode::kProtocolError,
                        "Adam server {} refused immediate {:#010x} from {}: that rank is not a worker of this job "
                        "(workers are ranks 0..{})",
                        server_, next->imm(), pair.peerName(), layout_.workers() - 1));
    return;
  }
}

Status AdamServerImpl::onPush(int worker, uint32_t raw) {
  const AdamImm imm = AdamImm::decode(raw);
  if (imm.type != static_cast<uint8_t>(AdamToServer::kPush)) {
    return makeStatus(StatusCode::kProtocolError,
                      "Adam server {} refused immediate {:#010x} from {}: type {}, expected push (0) or bye (1)",
                      server_, raw, workerName(worker), imm.type);
  }
  if (!holds(imm.layer)) {
    return makeStatus(StatusCode::kProtocolError,
                      "Adam server {} refused immediate {:#010x} from {}: a push of layer {}, which this server does "
                      "not hold (it holds layer l < {} when l % {} == {})",
                      server_, raw, workerName(worker), imm.layer, layout_.layerCount(), layout_.servers(), server_);
  }
  const size_t l = imm.layer;
  ServerLayerState& state = stateOf(l);
  std::lock_guard lock(state.mutex);
  const uint64_t iteration = state.pushed[static_cast<size_t>(worker)];
  if (iteration != state.done) {
    return makeStatus(StatusCode::kProtocolError,
                      "Adam server {} refused a push of {} from {}: it pushed iteration {} before the gradient of "
                      "iteration {} was sent",
                      server_, layout_.describe(l), workerName(worker), iteration, state.done);
  }
  if (imm.value != adamIterationLow(iteration)) {
    return makeStatus(StatusCode::kProtocolError,
                      "Adam server {} refused a push of {} from {}: iteration low bits {}, expected iteration {} "
                      "(low bits {})",
                      server_, layout_.describe(l), workerName(worker), imm.value, iteration,
                      adamIterationLow(iteration));
  }
  if (const int gone = departedWorker(); gone >= 0) {
    const Status status =
        makeStatus(StatusCode::kConnectionError, "Adam server {}: {} iteration {} cannot complete: {} has said goodbye",
                   server_, layout_.describe(l), iteration, workerName(gone));
    fail(gone, status);
    return status;
  }
  ++state.pushed[static_cast<size_t>(worker)];
  state.traffic.received_bytes += layout_.factorFloats(l) * sizeof(float);
  ++state.traffic.received_messages;
  if (state.arrived++ == 0) state.first_arrival = Clock::now();
  if (state.arrived < layout_.workers()) return Status::ok();
  // A failure to rebuild or send G is this server's, not the pushing worker's: every worker hears of it.
  if (Status sent = completeLocked(l, state); !sent.isOk()) {
    fail(-1, sent);
    return sent;
  }
  return Status::ok();
}

Status AdamServerImpl::completeLocked(size_t l, ServerLayerState& state) {
  // Every worker's factors of iteration `done` are in the slots. One slot per worker is enough: a
  // worker pushes iteration done + 1 only after G of `done` has landed in its memory, and this
  // server writes that G only below, after it has read the slots.
  //
  // The writes of the previous G read the buffer about to be rebuilt. They have landed (every
  // worker received that G before it pushed again), so finishing locally takes no time; bounded
  // all the same.
  for (size_t p = 0; p < state.writes.size(); ++p) {
    if (!state.writes[p]) continue;
    const Status written = state.writes[p]->wait(Deadline::after(options_.write_drain));
    if (written.code() == StatusCode::kTimeout) {
      return makeStatus(StatusCode::kTimeout,
                        "Adam server {}: the write of {} iteration {} to {} had not finished after {} ms, so G "
                        "cannot be rebuilt in its buffer",
                        server_, layout_.describe(l), state.done - 1, workerName(static_cast<int>(p)),
                        options_.write_drain.count());
    }
  }
  const size_t offset = gradient_offsets_[local(l)];
  const size_t floats = layout_.gradientFloats(l);
  POSEIDON_RETURN_IF_ERROR(reconstructAdamGradient(layout_.layer(l), layout_.batch(), state.u, state.v,
                                                   std::span<float>(gradients_.data() + offset, floats)));
  const uint64_t iteration = state.done++;
  ++state.traffic.syncs;
  state.arrived = 0;
  std::fill(state.told.begin(), state.told.end(), -1);
  const uint64_t bytes = floats * sizeof(float);
  for (int p = 0; p < layout_.workers(); ++p) {
    const auto w = static_cast<size_t>(p);
    state.writes[w] = context_.pair(p).write(*gradients_region_, offset * sizeof(float), workers_[w].gradients,
                                             layout_.gradientOffset(l) * sizeof(float), bytes,
                                             encodeAdamImm(AdamToWorker::kGradient, l, iteration));
    state.traffic.sent_bytes += bytes;
    ++state.traffic.sent_messages;
  }
  return Status::ok();
}

Status AdamServerImpl::onBye(int worker) {
  // Marked first: a push that checks departedWorker() after this sees it, one that checked before
  // has raised `arrived` under the layer's lock, which the loop below takes.
  worker_states_[static_cast<size_t>(worker)].store(WorkerState::kDone);
  for (size_t l : held_) {
    ServerLayerState& state = stateOf(l);
    std::lock_guard lock(state.mutex);
    if (state.pushed[static_cast<size_t>(worker)] != state.done) {
      return makeStatus(StatusCode::kProtocolError,
                        "Adam server {}: {} said goodbye before the gradient of its push of {} iteration {} was sent",
                        server_, workerName(worker), layout_.describe(l), state.done);
    }
    if (state.arrived > 0) {
      return makeStatus(StatusCode::kConnectionError,
                        "Adam server {}: {} said goodbye, but {} iteration {} waits for its factors", server_,
                        workerName(worker), layout_.describe(l), state.done);
    }
  }
  std::lock_guard lock(done_mutex_);
  --running_workers_;
  done_cv_.notify_all();
  return Status::ok();
}

void AdamServerImpl::reportStalls(int worker) {
  const auto w = static_cast<size_t>(worker);
  const auto now = Clock::now();
  for (size_t l : held_) {
    ServerLayerState& state = stateOf(l);
    // A layer busy rebuilding G is not late; the next look will do.
    std::unique_lock lock(state.mutex, std::try_to_lock);
    if (!lock || state.arrived == 0 || state.pushed[w] != state.done + 1) continue;
    if (now - state.first_arrival < options_.stall_notice) continue;
    int laggard = -1;
    for (size_t p = 0; p < state.pushed.size() && laggard < 0; ++p) {
      if (state.pushed[p] == state.done) laggard = static_cast<int>(p);
    }
    if (laggard < 0 || laggard == state.told[w]) continue;
    state.told[w] = laggard;
    // An empty write: only the immediate travels. Posted under the layer's lock, so it reaches the
    // worker before this iteration's G. A failure shows up in this worker's thread.
    (void)context_.pair(worker).write(*notice_region_, 0, workers_[w].notices, 0, 0,
                                      encodeAdamImm(AdamToWorker::kWaiting, l, static_cast<uint64_t>(laggard)));
  }
}

int AdamServerImpl::departedWorker() const {
  for (size_t w = 0; w < worker_states_.size(); ++w) {
    if (worker_states_[w].load() == WorkerState::kDone) return static_cast<int>(w);
  }
  return -1;
}

void AdamServerImpl::fail(int culprit, const Status& why) {
  bool first = false;
  if (!failed_.compare_exchange_strong(first, true)) return;  // the first failure is the reason
  if (culprit >= 0) {
    auto active = WorkerState::kActive;
    worker_states_[static_cast<size_t>(culprit)].compare_exchange_strong(active, WorkerState::kFailed);
  }
  if (!stopping_.load()) {
    spdlog::error("{}", why.toString());
    // Every worker still here learns why, so it fails naming the culprit instead of waiting.
    writeAdamNotice(notice_, why.toString());
    const uint32_t who = culprit >= 0 ? static_cast<uint32_t>(culprit) : kAdamNoWorker;
    for (int p = 0; p < layout_.workers(); ++p) {
      const auto w = static_cast<size_t>(p);
      if (p == culprit || worker_states_[w].load() != WorkerState::kActive) continue;
      notice_writes_.push_back(context_.pair(p).write(
          *notice_region_, 0, workers_[w].notices, static_cast<uint64_t>(server_) * kAdamNoticeBytes, kAdamNoticeBytes,
          encodeAdamImm(AdamToWorker::kFailed, static_cast<size_t>(why.code()), who)));
    }
  }
  std::lock_guard lock(done_mutex_);
  failure_ = why;
  done_cv_.notify_all();
}

}  // namespace

Result<std::unique_ptr<AdamServer>> AdamServer::start(transport::Context& context, transport::bootstrap::Store& store,
                                                      std::span<const model::Layer> layers, uint64_t batch, int workers,
                                                      Deadline deadline, const AdamServerOptions& options) {
  if (options.write_drain.count() <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "Adam server write_drain {} ms; expected > 0",
                      options.write_drain.count());
  }
  auto layout = AdamLayout::forContext(layers, batch, workers, context.size());
  if (!layout) return layout.status();
  if (context.rank() < workers) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "rank {} is a worker of the Adam job (ranks 0..{}); a server runs on ranks {}..{}",
                      context.rank(), workers - 1, workers, context.size() - 1);
  }
  auto server = std::make_unique<AdamServerImpl>(context, std::move(*layout), options);
  POSEIDON_RETURN_IF_ERROR(server->setUp(store, deadline));
  return std::unique_ptr<AdamServer>(std::move(server));
}

}  // namespace poseidon::adam
