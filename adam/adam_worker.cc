#include "adam/adam_worker.h"

#include <fmt/format.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "adam/adam_protocol.h"
#include "common/deadline_wait.h"
#include "scheme/serial_driver.h"

namespace poseidon::adam {

namespace {

struct WorkerLayerState {
  uint64_t pushed = 0;         // iterations pushed
  uint64_t landed = 0;         // gradients received
  bool waited = true;          // wait() returned OK for every push so far
  transport::RequestPtr push;  // the write of the last push
  int laggard = -1;            // whose factors the server said this iteration waits for (-1: not said)
  Clock::time_point laggard_since{};
  scheme::Traffic traffic;
};

// A status code a peer sent in an immediate, or kProtocolError when it is none we know.
StatusCode peerCode(uint32_t value) {
  if (value >= 1 && value <= static_cast<uint32_t>(StatusCode::kInternal)) return static_cast<StatusCode>(value);
  return StatusCode::kProtocolError;
}

class AdamWorkerImpl final : public AdamWorker {
 public:
  AdamWorkerImpl(transport::Context& context, AdamLayout layout)
      : context_(context),
        layout_(std::move(layout)),
        worker_(context.rank()),
        layers_(layout_.layerCount()),
        server_failures_(static_cast<size_t>(layout_.servers())),
        driver_(std::make_unique<scheme::SerialDriver>("Adam worker driver")) {}

  ~AdamWorkerImpl() override {
    driver_.reset();  // the running wait ends (by its deadline); queued ones fail
    stopping_.store(true);
    for (std::thread& thread : threads_) thread.join();
    // Regions must outlive the writes reading them.
    const Deadline drain = Deadline::after(kDrainAtExit);
    for (const WorkerLayerState& layer : layers_) {
      if (layer.push) (void)layer.push->wait(drain);
    }
    for (const transport::RequestPtr& bye : byes_) (void)bye->wait(drain);
  }

  Status setUp(transport::bootstrap::Store& store, Deadline deadline);

  int worker() const override { return worker_; }
  const AdamLayout& layout() const override { return layout_; }

  std::span<float> u(size_t l) override {
    if (l >= layout_.layerCount()) return {};
    return {factors_.data() + layout_.factorOffset(l), layout_.uFloats(l)};
  }
  std::span<float> v(size_t l) override {
    if (l >= layout_.layerCount()) return {};
    return {factors_.data() + layout_.factorOffset(l) + layout_.uFloats(l),
            layout_.factorFloats(l) - layout_.uFloats(l)};
  }
  std::span<const float> gradient(size_t l) const override {
    if (l >= layout_.layerCount()) return {};
    return {gradients_.data() + layout_.gradientOffset(l), layout_.gradientFloats(l)};
  }

  Status push(size_t l) override;
  Status wait(size_t l, Deadline deadline) override;
  transport::RequestPtr start(size_t l, Deadline deadline) override;
  Status finish(Deadline deadline) override;

  scheme::Traffic traffic(size_t l) const override {
    if (l >= layout_.layerCount()) return {};
    std::lock_guard lock(mutex_);
    return layers_[l].traffic;
  }

 private:
  // How long a server's thread sleeps in one wait before it looks whether the worker stops.
  static constexpr auto kPoll = std::chrono::milliseconds(200);
  // Bound on the writes still finishing when the worker is destroyed.
  static constexpr auto kDrainAtExit = std::chrono::seconds(5);

  int serverRank(int server) const { return layout_.workers() + server; }
  std::string serverName(int server) {
    return fmt::format("Adam server {} ({})", server, context_.pair(serverRank(server)).peerName());
  }
  Status badLayer(size_t l, const char* call) const {
    return makeStatus(StatusCode::kInvalidArgument, "worker {}: {} of layer {}; the Adam job has {} layers", worker_,
                      call, l, layout_.layerCount());
  }

  void listen(int server);
  Status onImm(int server, uint32_t raw);
  void failServer(int server, const Status& why);

  transport::Context& context_;
  const AdamLayout layout_;
  const int worker_;

  // Buffers before their regions, so the regions are deregistered first.
  std::vector<float> factors_;
  std::vector<float> gradients_;
  std::vector<uint8_t> notices_;
  std::unique_ptr<transport::MemoryRegion> factors_region_;
  std::unique_ptr<transport::MemoryRegion> gradients_region_;
  std::unique_ptr<transport::MemoryRegion> notices_region_;
  std::vector<transport::RemoteDescriptor> slots_;  // per server

  mutable std::mutex mutex_;  // guards everything below but the threads
  std::condition_variable cv_;
  std::vector<WorkerLayerState> layers_;
  std::vector<Status> server_failures_;  // per server: why it can no longer serve this worker
  bool finished_ = false;
  std::vector<transport::RequestPtr> byes_;

  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<scheme::SerialDriver> driver_;  // runs start()'s waits
};

Status AdamWorkerImpl::setUp(transport::bootstrap::Store& store, Deadline deadline) {
  factors_.assign(layout_.factorTotal(), 0.0f);
  gradients_.assign(layout_.gradientTotal(), 0.0f);
  notices_.assign(static_cast<size_t>(layout_.servers()) * kAdamNoticeBytes, 0);
  struct Registration {
    void* data;
    size_t bytes;
    std::unique_ptr<transport::MemoryRegion>* region;
    const char* what;
  };
  for (const Registration& r :
       {Registration{factors_.data(), factors_.size() * sizeof(float), &factors_region_, "factor"},
        Registration{gradients_.data(), gradients_.size() * sizeof(float), &gradients_region_, "gradient"},
        Registration{notices_.data(), notices_.size(), &notices_region_, "notice"}}) {
    auto made = context_.registerMemory(r.data, r.bytes);
    if (!made) return made.status().withContext(fmt::format("Adam worker {}: {} buffer", worker_, r.what));
    *r.region = std::move(*made);
  }
  POSEIDON_RETURN_IF_ERROR(
      publishAdamWorker(store, context_.name(), worker_, layout_, *gradients_region_, *notices_region_));
  auto slots = fetchAdamServers(store, context_.name(), layout_, deadline);
  if (!slots) return slots.status().withContext(fmt::format("Adam worker {}", worker_));
  slots_ = std::move(*slots);
  for (int s = 0; s < layout_.servers(); ++s) threads_.emplace_back([this, s] { listen(s); });
  return Status::ok();
}

void AdamWorkerImpl::listen(int server) {
  transport::Pair& pair = context_.pair(serverRank(server));
  transport::RequestPtr next = pair.recvImm();
  while (!stopping_.load()) {
    (void)next->wait(Deadline::after(kPoll));
    if (!next->test()) continue;  // it may complete between the timeout and this look
    if (!next->status().isOk()) {
      failServer(server, makeStatus(StatusCode::kConnectionError, "lost {}: {}", serverName(server),
                                    next->status().toString()));
      return;
    }
    const uint32_t raw = next->imm();
    next = pair.recvImm();
    if (Status status = onImm(server, raw); !status.isOk()) {
      failServer(server, status);
      return;
    }
  }
}

Status AdamWorkerImpl::onImm(int server, uint32_t raw) {
  const AdamImm imm = AdamImm::decode(raw);
  if (imm.type == static_cast<uint8_t>(AdamToWorker::kFailed)) {
    // The notice's text was written before this immediate, so it is in place.
    const std::string reason = readAdamNotice(
        std::span<const uint8_t>(notices_.data() + static_cast<size_t>(server) * kAdamNoticeBytes, kAdamNoticeBytes));
    return makeStatus(peerCode(imm.layer), "{} gave up: {}", serverName(server), reason);
  }
  if (imm.type != static_cast<uint8_t>(AdamToWorker::kGradient) &&
      imm.type != static_cast<uint8_t>(AdamToWorker::kWaiting)) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent immediate {:#010x} of type {}; expected gradient (0), waiting (1) or failed (2)",
                      serverName(server), raw, imm.type);
  }
  if (imm.layer >= layout_.layerCount() || layout_.serverOf(imm.layer) != server) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent immediate {:#010x} naming layer {}, which it does not hold (of {} layers, server s "
                      "holds l when l % {} == s)",
                      serverName(server), raw, imm.layer, layout_.layerCount(), layout_.servers());
  }
  std::lock_guard lock(mutex_);
  WorkerLayerState& layer = layers_[imm.layer];
  const uint64_t iteration = layer.landed;
  if (layer.landed == layer.pushed) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent immediate {:#010x} for {}, for which worker {} has no push outstanding ({} pushed, "
                      "{} gradients received)",
                      serverName(server), raw, layout_.describe(imm.layer), worker_, layer.pushed, layer.landed);
  }
  if (imm.type == static_cast<uint8_t>(AdamToWorker::kWaiting)) {
    if (imm.value >= static_cast<uint32_t>(layout_.workers())) {
      return makeStatus(StatusCode::kProtocolError, "{} said {} iteration {} waits for worker {}; the job has {}",
                        serverName(server), layout_.describe(imm.layer), iteration, imm.value, layout_.workers());
    }
    layer.laggard = static_cast<int>(imm.value);
    layer.laggard_since = Clock::now();
    return Status::ok();
  }
  if (imm.value != adamIterationLow(iteration)) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent the gradient of {} for iteration low bits {}; expected iteration {} (low bits {})",
                      serverName(server), layout_.describe(imm.layer), imm.value, iteration,
                      adamIterationLow(iteration));
  }
  ++layer.landed;
  layer.laggard = -1;
  layer.traffic.received_bytes += layout_.gradientFloats(imm.layer) * sizeof(float);
  ++layer.traffic.received_messages;
  cv_.notify_all();
  return Status::ok();
}

void AdamWorkerImpl::failServer(int server, const Status& why) {
  std::lock_guard lock(mutex_);
  Status& failure = server_failures_[static_cast<size_t>(server)];
  if (failure.isOk()) failure = why;  // the first reason is the one to report
  cv_.notify_all();
}

Status AdamWorkerImpl::push(size_t l) {
  if (l >= layout_.layerCount()) return badLayer(l, "push");
  const int server = layout_.serverOf(l);
  std::lock_guard lock(mutex_);
  WorkerLayerState& layer = layers_[l];
  // Formatted only on failure: push() is on the per-iteration path.
  const auto what = [&, iteration = layer.pushed] {
    return fmt::format("worker {}: push of {} iteration {}", worker_, layout_.describe(l), iteration);
  };
  if (finished_) return makeStatus(StatusCode::kInvalidArgument, "{} after finish()", what());
  if (const Status& failure = server_failures_[static_cast<size_t>(server)]; !failure.isOk()) {
    return failure.withContext(what());
  }
  if (!layer.waited) {
    return makeStatus(StatusCode::kInvalidArgument, "{} before wait() returned the gradient of iteration {}", what(),
                      layer.pushed - 1);
  }
  const uint64_t bytes = layout_.factorFloats(l) * sizeof(float);
  layer.push = context_.pair(serverRank(server))
                   .write(*factors_region_, layout_.factorOffset(l) * sizeof(float),
                          slots_[static_cast<size_t>(server)], layout_.slotOffset(l, worker_) * sizeof(float), bytes,
                          encodeAdamImm(AdamToServer::kPush, l, layer.pushed));
  ++layer.pushed;
  layer.waited = false;
  layer.laggard = -1;
  layer.traffic.sent_bytes += bytes;
  ++layer.traffic.sent_messages;
  // A write refused at once (a broken connection) fails here rather than at the deadline.
  if (layer.push->test() && !layer.push->status().isOk()) return layer.push->status().withContext(what());
  return Status::ok();
}

Status AdamWorkerImpl::wait(size_t l, Deadline deadline) {
  if (l >= layout_.layerCount()) return badLayer(l, "wait");
  const int server = layout_.serverOf(l);
  std::unique_lock lock(mutex_);
  WorkerLayerState& layer = layers_[l];
  if (layer.pushed == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "worker {}: wait for {} before any push of it", worker_,
                      layout_.describe(l));
  }
  const auto what = [&, iteration = layer.pushed - 1] {
    return fmt::format("worker {}: {} iteration {}", worker_, layout_.describe(l), iteration);
  };
  const Status& failure = server_failures_[static_cast<size_t>(server)];
  (void)waitWithDeadline(cv_, lock, deadline, [&] { return layer.landed == layer.pushed || !failure.isOk(); });
  if (layer.landed == layer.pushed) {
    // The server read the factors before it sent G, so their write is done or about to be (on
    // verbs its acknowledgement may trail G); once it is, u(l) and v(l) may be refilled.
    const transport::RequestPtr write = layer.push;
    lock.unlock();
    if (Status written = write->wait(deadline); !written.isOk()) return written.withContext(what());
    lock.lock();
    if (!layer.waited) ++layer.traffic.syncs;
    layer.waited = true;
    return Status::ok();
  }
  if (!failure.isOk()) return failure.withContext(what());
  if (layer.push->test() && !layer.push->status().isOk()) return layer.push->status().withContext(what());
  std::string laggard = "the server has not reported whose factors it waits for";
  if (layer.laggard >= 0) {
    const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - layer.laggard_since);
    laggard = fmt::format("the server reported {} ms ago that it still waits for the factors of worker {} (rank {})",
                          ago.count(), layer.laggard, layer.laggard);
  }
  return makeStatus(StatusCode::kTimeout, "{}: no gradient from {} by the deadline; {}", what(), serverName(server),
                    laggard);
}

transport::RequestPtr AdamWorkerImpl::start(size_t l, Deadline deadline) {
  std::string what = l < layout_.layerCount() ? fmt::format("worker {}: Adam sync of {}", worker_, layout_.describe(l))
                                              : fmt::format("worker {}: Adam sync of layer {}", worker_, l);
  Status pushed = push(l);
  if (!pushed.isOk()) return transport::failedRequest(std::move(what), std::move(pushed));
  return driver_->submit(std::move(what), [this, l, deadline] { return wait(l, deadline); });
}

Status AdamWorkerImpl::finish(Deadline deadline) {
  std::vector<transport::RequestPtr> byes;
  {
    std::lock_guard lock(mutex_);
    if (finished_) return Status::ok();
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (!layers_[l].waited) {
        return makeStatus(StatusCode::kInvalidArgument,
                          "worker {}: finish() while {} iteration {} has not been waited for", worker_,
                          layout_.describe(l), layers_[l].pushed - 1);
      }
    }
    finished_ = true;
    for (int s = 0; s < layout_.servers(); ++s) {
      if (!server_failures_[static_cast<size_t>(s)].isOk()) continue;  // it is not listening any more
      // An empty write: only the immediate travels.
      byes_.push_back(context_.pair(serverRank(s))
                          .write(*factors_region_, 0, slots_[static_cast<size_t>(s)], 0, 0,
                                 encodeAdamImm(AdamToServer::kBye, 0, 0)));
    }
    byes = byes_;
  }
  return transport::waitAll(byes, deadline).withContext(fmt::format("worker {}: goodbye to the Adam servers", worker_));
}

}  // namespace

Result<std::unique_ptr<AdamWorker>> AdamWorker::start(transport::Context& context, transport::bootstrap::Store& store,
                                                      std::span<const model::Layer> layers, uint64_t batch, int workers,
                                                      Deadline deadline) {
  auto layout = AdamLayout::forContext(layers, batch, workers, context.size());
  if (!layout) return layout.status();
  if (context.rank() >= workers) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "rank {} is a server of the Adam job (ranks {}..{}); a worker runs on ranks 0..{}",
                      context.rank(), workers, context.size() - 1, workers - 1);
  }
  auto worker = std::make_unique<AdamWorkerImpl>(context, std::move(*layout));
  POSEIDON_RETURN_IF_ERROR(worker->setUp(store, deadline));
  return std::unique_ptr<AdamWorker>(std::move(worker));
}

}  // namespace poseidon::adam
