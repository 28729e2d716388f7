#include "sfb/sf_broadcast.h"

#include <fmt/format.h>

#include "kernels/sf_bias.h"
#include "sfb/sf_imm.h"
#include "sfb/sf_region_exchange.h"

namespace poseidon::sfb {

namespace {
// How long the destructor waits for this worker's writes before deregistering their memory.
constexpr auto kCloseWait = std::chrono::seconds(5);
}  // namespace

class SfBroadcast::LayerCall {
 public:
  explicit LayerCall(LayerState& state)
      : state_(state), entered_(!state.busy.exchange(true, std::memory_order_acquire)) {}
  LayerCall(const LayerCall&) = delete;
  LayerCall& operator=(const LayerCall&) = delete;
  ~LayerCall() {
    if (entered_) state_.busy.store(false, std::memory_order_release);
  }
  bool entered() const { return entered_; }

 private:
  LayerState& state_;
  const bool entered_;
};

Result<std::unique_ptr<SfBroadcast>> SfBroadcast::start(transport::Context& context, transport::bootstrap::Store& store,
                                                        std::vector<model::Layer> layers, uint64_t batch,
                                                        Deadline deadline) {
  auto layout = SfSlotLayout::build(layers, batch, context.size());
  if (!layout) return layout.status();
  std::unique_ptr<SfBroadcast> self(new SfBroadcast(context, std::move(*layout)));
  const SfSlotLayout& built = self->layout_;

  auto send = context.registerMemory(self->send_.data(), self->send_.size() * sizeof(float));
  if (!send) return send.status().withContext("SFB factor buffer");
  self->send_region_ = std::move(*send);
  if (context.size() > 1) {
    auto receive = context.registerMemory(self->receive_.data(), self->receive_.size() * sizeof(float));
    if (!receive) return receive.status().withContext("SFB receive buffer");
    self->receive_region_ = std::move(*receive);
    POSEIDON_RETURN_IF_ERROR(publishSfRegion(store, context.name(), context.rank(), built, *self->receive_region_));
  }
  auto remotes = fetchSfRegions(store, context.name(), context.rank(), built, deadline);
  if (!remotes) return remotes.status();
  self->remotes_ = std::move(*remotes);
  return self;
}

SfBroadcast::SfBroadcast(transport::Context& context, SfSlotLayout layout)
    : context_(context),
      layout_(std::move(layout)),
      send_(layout_.sendFloats()),
      receive_(layout_.receiveFloats()),
      iterations_(layout_.layerCount()),
      layers_(layout_.layerCount()),
      driver_(std::make_unique<scheme::SerialDriver>("SFB driver")) {
  const int me = context.rank();
  for (int rank = 0; rank < context.size(); ++rank) {
    if (rank != me) peers_.push_back(rank);
  }
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = layers_[l];
    state.writes.resize(peers_.size());
    if (layout_.layer(l).fc().bias) state.bias_gradient.assign(static_cast<size_t>(layout_.layer(l).fc().rows), 0.0f);
    for (int bank = 0; bank < 2; ++bank) {
      for (int rank = 0; rank < context.size(); ++rank) {
        const float* factors = rank == me
                                   ? send_.data() + layout_.sendOffset(l)
                                   : receive_.data() + layout_.slotOffset(l, static_cast<uint64_t>(bank), me, rank);
        state.u[bank].push_back(factors);
        state.v[bank].push_back(factors + layout_.uFloats(l));
      }
    }
  }
  for (int peer : peers_) inboxes_.push_back(std::make_unique<SfInbox>(context.pair(peer), layout_, iterations_));
}

SfBroadcast::~SfBroadcast() {
  driver_.reset();  // the running update ends while the buffers exist; queued ones fail
  // Writes a failed or timed-out call left in flight still read the send buffer: a broken pair
  // fails them at once, so this waits (bounded) only for writes about to complete.
  const Deadline drain = Deadline::after(kCloseWait);
  for (LayerState& state : layers_) {
    for (const transport::RequestPtr& write : state.writes) {
      if (write) (void)write->wait(drain);
    }
  }
}

std::span<float> SfBroadcast::u(size_t layer) {
  if (layer >= layerCount()) return {};
  return {send_.data() + layout_.sendOffset(layer), layout_.uFloats(layer)};
}

std::span<float> SfBroadcast::v(size_t layer) {
  if (layer >= layerCount()) return {};
  return {send_.data() + layout_.sendOffset(layer) + layout_.uFloats(layer),
          layout_.factorFloats(layer) - layout_.uFloats(layer)};
}

uint64_t SfBroadcast::iteration(size_t layer) const {
  return layer < layerCount() ? iterations_[layer].load(std::memory_order_acquire) : 0;
}

Status SfBroadcast::broadcast(size_t layer) {
  if (layer >= layerCount()) return unknownLayer(layer, "broadcast");
  LayerState& state = layers_[layer];
  LayerCall call(state);
  if (!call.entered()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SFB broadcast of {} while another call for it runs; calls for one layer must not "
                      "overlap",
                      describe(layer));
  }
  const uint64_t t = iterations_[layer].load(std::memory_order_relaxed);
  if (state.phase != Phase::kIdle) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SFB broadcast of {} for iteration {} refused: its update of iteration {} has not "
                      "run on this worker (peers could then send iteration {} into the slots it reads)",
                      describe(layer), t + 1, t, t + 2);
  }
  const uint64_t bytes = layout_.factorFloats(layer) * sizeof(float);
  const uint64_t local_offset = layout_.sendOffset(layer) * sizeof(float);
  const uint32_t imm = encodeSfImm(layer, t);
  Status first;
  for (size_t i = 0; i < peers_.size(); ++i) {
    const int peer = peers_[i];
    const uint64_t remote_offset = layout_.slotOffset(layer, t, peer, context_.rank()) * sizeof(float);
    auto& request = state.writes[i];
    request = context_.pair(peer).write(*send_region_, local_offset, remotes_[static_cast<size_t>(peer)], remote_offset,
                                        bytes, imm);
    if (first.isOk() && request->test() && !request->status().isOk()) {
      first = request->status().withContext(fmt::format("SFB broadcast of {} iteration {}", describe(layer), t));
    }
  }
  state.phase = Phase::kBroadcast;
  state.sent_messages.fetch_add(peers_.size(), std::memory_order_relaxed);
  state.sent_bytes.fetch_add(peers_.size() * bytes, std::memory_order_relaxed);
  return first;
}

transport::RequestPtr SfBroadcast::start(size_t layer, const Target& target, const kernels::OptimizerStep& step,
                                         Deadline deadline) {
  if (layer >= layerCount()) {
    return transport::failedRequest(fmt::format("SFB sync of layer {}", layer), unknownLayer(layer, "start"));
  }
  std::string what = fmt::format("SFB sync of {} iteration {}", describe(layer), iteration(layer));
  Status sent = broadcast(layer);
  if (!sent.isOk()) return transport::failedRequest(std::move(what), std::move(sent));
  return driver_->submit(std::move(what), [this, layer, target, step, deadline] {
    return update(layer, target.params, target.state0, target.state1, step, kernels::Place::cpu(), deadline);
  });
}

Status SfBroadcast::update(size_t layer, float* params, float* state0, float* state1,
                           const kernels::OptimizerStep& step, kernels::Place place, Deadline deadline) {
  if (layer >= layerCount()) return unknownLayer(layer, "update");
  if (place.device != kernels::Device::kCpu) {
    // The slots are host memory (and the kernel would still be reading a bank after update()
    // returned, when the BSP argument above no longer holds): device-resident slots would be
    // needed first.
    return makeStatus(StatusCode::kUnavailable,
                      "SFB update of {} on a GPU: the factors live in host memory; use Place::cpu()", describe(layer));
  }
  LayerState& state = layers_[layer];
  LayerCall call(state);
  if (!call.entered()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SFB update of {} while another call for it runs; calls for one layer must not overlap",
                      describe(layer));
  }
  const uint64_t t = iterations_[layer].load(std::memory_order_relaxed);
  if (state.phase == Phase::kIdle) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SFB update of {} iteration {} before its broadcast (peers need this worker's "
                      "factors first)",
                      describe(layer), t);
  }
  if (state.phase == Phase::kBroadcast) {
    POSEIDON_RETURN_IF_ERROR(awaitFactors(layer, t, deadline));
    const model::FcShape& shape = layout_.layer(layer).fc();
    const size_t bank = static_cast<size_t>(t & 1);
    kernels::SfUpdate job;
    job.params = params;
    job.state0 = state0;
    job.state1 = state1;
    job.rows = shape.rows;
    job.cols = shape.cols;
    job.rank = layout_.batch();
    job.u = state.u[bank];
    job.v = state.v[bank];
    job.step = step;
    job.method = kernels::SfMethod::kExact;  // the one that keeps replicas bit-identical
    const Status done = kernels::sfUpdate(job, place);
    if (!done.isOk()) {
      return makeStatus(StatusCode::kInvalidArgument, "SFB update of {} iteration {}: {}", describe(layer), t,
                        done.message());
    }
    if (shape.bias) POSEIDON_RETURN_IF_ERROR(updateBias(layer, bank, params, state0, state1, step));
    state.phase = Phase::kApplied;
  }
  POSEIDON_RETURN_IF_ERROR(completeWrites(layer, t, deadline));
  for (auto& request : state.writes) request.reset();
  state.phase = Phase::kIdle;
  iterations_[layer].store(t + 1, std::memory_order_release);
  return Status::ok();
}

Status SfBroadcast::updateBias(size_t layer, size_t bank, float* params, float* state0, float* state1,
                               const kernels::OptimizerStep& step) {
  LayerState& state = layers_[layer];
  const model::FcShape& shape = layout_.layer(layer).fc();
  // The bias follows the weight in params and in the state: from U's row sums, no extra traffic.
  kernels::sfBiasGradient(shape.rows, layout_.batch(), state.u[bank], state.bias_gradient.data());
  const size_t weight = shape.rows * shape.cols;
  const float* summed = state.bias_gradient.data();
  kernels::ChunkUpdate update;
  update.params = params + weight;
  update.state0 = state0 == nullptr ? nullptr : state0 + weight;
  update.state1 = state1 == nullptr ? nullptr : state1 + weight;
  update.count = shape.rows;
  update.gradients = std::span<const float* const>(&summed, 1);
  update.step = step;
  const Status done = kernels::chunkUpdate(update, kernels::Place::cpu());
  if (!done.isOk()) {
    return makeStatus(StatusCode::kInvalidArgument, "SFB update of {}'s bias: {}", describe(layer), done.message());
  }
  return Status::ok();
}

Status SfBroadcast::awaitFactors(size_t layer, uint64_t iteration, Deadline deadline) {
  const auto context = [&] { return fmt::format("SFB update of {} iteration {}", describe(layer), iteration); };
  // First take what has landed from everyone without blocking, so that a peer already known to
  // have failed is reported at once instead of after waiting for the others.
  const Deadline now(Clock::now());
  for (auto& inbox : inboxes_) {
    const Status landed = inbox->waitFor(layer, iteration, now);
    if (!landed.isOk() && landed.code() != StatusCode::kTimeout) return landed.withContext(context());
  }
  for (auto& inbox : inboxes_) {
    const Status landed = inbox->waitFor(layer, iteration, deadline);
    if (landed.code() == StatusCode::kTimeout) break;
    if (!landed.isOk()) return landed.withContext(context());
  }
  std::string missing;
  for (auto& inbox : inboxes_) {
    const Status landed = inbox->waitFor(layer, iteration, Deadline(Clock::now()));
    if (landed.isOk()) continue;
    if (landed.code() != StatusCode::kTimeout) return landed.withContext(context());
    if (!missing.empty()) missing += ", ";
    missing += inbox->pair().peerName();
    const Status connection = inbox->pair().status();
    if (!connection.isOk()) missing += fmt::format(" (connection failed: {})", connection.message());
  }
  if (missing.empty()) return Status::ok();
  return makeStatus(StatusCode::kTimeout, "{}: the factors of {} did not arrive before the deadline", context(),
                    missing);
}

Status SfBroadcast::completeWrites(size_t layer, uint64_t iteration, Deadline deadline) {
  const LayerState& state = layers_[layer];
  std::string pending;
  for (size_t i = 0; i < peers_.size(); ++i) {
    const auto& request = state.writes[i];
    if (!request) continue;
    (void)request->wait(deadline);  // the outcome is read from the request itself
    if (!request->test()) {
      if (!pending.empty()) pending += ", ";
      pending += context_.pair(peers_[i]).peerName();
    } else if (!request->status().isOk()) {
      return request->status().withContext(
          fmt::format("SFB update of {} iteration {}: this worker's write", describe(layer), iteration));
    }
  }
  if (pending.empty()) return Status::ok();
  return makeStatus(StatusCode::kTimeout,
                    "SFB update of {} iteration {}: this worker's writes to {} did not complete before the "
                    "deadline",
                    describe(layer), iteration, pending);
}

scheme::Traffic SfBroadcast::traffic(size_t layer) const {
  scheme::Traffic traffic;
  if (layer >= layerCount()) return traffic;
  const LayerState& state = layers_[layer];
  traffic.syncs = iterations_[layer].load(std::memory_order_acquire);
  traffic.sent_messages = state.sent_messages.load(std::memory_order_relaxed);
  traffic.sent_bytes = state.sent_bytes.load(std::memory_order_relaxed);
  for (const auto& inbox : inboxes_) traffic.received_messages += inbox->arrivals(layer);
  traffic.received_bytes = traffic.received_messages * layout_.factorFloats(layer) * sizeof(float);
  return traffic;
}

std::string SfBroadcast::describe(size_t layer) const {
  return fmt::format("layer {} '{}'", layer, layout_.layer(layer).name());
}

Status SfBroadcast::unknownLayer(size_t layer, const char* call) const {
  return makeStatus(StatusCode::kInvalidArgument, "SFB {} of layer {}: there are {} layers", call, layer, layerCount());
}

}  // namespace poseidon::sfb
