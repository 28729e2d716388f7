#include "ring/ring_allreduce.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <new>

#include "ring/ring_geometry.h"
#include "ring/ring_setup.h"
#include "ring/ring_state.h"

namespace poseidon::ring {
namespace {

// Bounds that keep the staging an allocation a machine can make and a piece one write.
constexpr size_t kMaxPieceBytes = size_t{1} << 30;
constexpr size_t kMaxStagingSlots = 1024;
// Payload writes in flight per staging slot: enough that all-gather pieces, which need no
// credit, keep the link busy while earlier writes complete.
constexpr size_t kWritesPerSlot = 4;
// How long allreduce() waits past its deadline for its own pass's verdict, which names the peer.
constexpr auto kVerdictGrace = std::chrono::seconds(1);
// How long the destructor waits for this rank's writes before deregistering their memory.
constexpr auto kCloseWait = std::chrono::seconds(5);

Status checkOptions(const RingOptions& options) {
  if (options.piece_bytes < sizeof(float) || options.piece_bytes % sizeof(float) != 0 ||
      options.piece_bytes > kMaxPieceBytes) {
    return makeStatus(StatusCode::kInvalidArgument, "piece_bytes {}, expected a multiple of 4 in [4, {}]",
                      options.piece_bytes, kMaxPieceBytes);
  }
  if (options.staging_slots < 1 || options.staging_slots > kMaxStagingSlots) {
    return makeStatus(StatusCode::kInvalidArgument, "staging_slots {}, expected 1..{}", options.staging_slots,
                      kMaxStagingSlots);
  }
  return Status::ok();
}

// Floats before each layer; fails on a name too long to publish, or when the total (times the ranks, for the segment
// arithmetic, and in bytes) would not fit in 64 bits.
Result<std::vector<uint64_t>> layerOffsets(const std::vector<model::Layer>& layers, int ranks) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() / sizeof(float) / static_cast<uint64_t>(ranks);
  std::vector<uint64_t> offsets;
  offsets.reserve(layers.size());
  uint64_t total = 0;
  for (const model::Layer& layer : layers) {
    offsets.push_back(total);
    if (layer.name().size() > kMaxRingLayerNameBytes) {
      return makeStatus(StatusCode::kInvalidArgument, "layer {} has a name of {} bytes, limit {}", offsets.size() - 1,
                        layer.name().size(), kMaxRingLayerNameBytes);
    }
    const uint64_t floats = layer.denseFloats();
    if (floats > limit - total) {
      return makeStatus(StatusCode::kInvalidArgument, "layer '{}' of {} floats brings the total past {} floats",
                        layer.name(), floats, limit);
    }
    total += floats;
  }
  offsets.push_back(total);
  return offsets;
}

// Registers the buffer and staging, publishes them, fetches the neighbours' and posts the first
// notifications on every pair.
Status connectRing(RingState& s, transport::bootstrap::Store& store, const RingOptions& options, Deadline deadline) {
  try {
    s.data.assign(std::max<uint64_t>(s.offsets.back(), 1), 0.0f);
    s.staging.assign(s.ranks > 1 ? s.slots * s.piece_floats : 1, 0.0f);
  } catch (const std::bad_alloc&) {
    return makeStatus(StatusCode::kUnavailable,
                      "cannot allocate a buffer of {} floats and a staging of {} pieces of {} bytes", s.offsets.back(),
                      s.slots, options.piece_bytes);
  }
  auto data = s.context.registerMemory(s.data.data(), s.data.size() * sizeof(float));
  if (!data) return data.status().withContext("registering the ring buffer");
  s.data_region = std::move(*data);
  auto staging = s.context.registerMemory(s.staging.data(), s.staging.size() * sizeof(float));
  if (!staging) return staging.status().withContext("registering the ring staging");
  s.staging_region = std::move(*staging);
  if (s.ranks == 1) return Status::ok();

  const RingSetup mine{s.ranks, options.piece_bytes, s.slots, publishedLayers(s.layers)};
  const RingRendezvous where{store, options.name, s.context.name()};
  POSEIDON_RETURN_IF_ERROR(
      publishRingSetup(where, s.rank, mine, {s.data_region->remote(), s.staging_region->remote()}));
  const int pred = (s.rank + s.ranks - 1) % s.ranks;
  const int succ = (s.rank + 1) % s.ranks;
  s.to_pred = &s.context.pair(pred);
  s.to_succ = &s.context.pair(succ);
  auto succ_regions = fetchRingSetup(where, s.rank, mine, succ, s.to_succ->peerName(), "successor", deadline);
  if (!succ_regions) return succ_regions.status();
  auto pred_regions = fetchRingSetup(where, s.rank, mine, pred, s.to_pred->peerName(), "predecessor", deadline);
  if (!pred_regions) return pred_regions.status();
  s.succ_data = succ_regions->buffer;
  s.succ_staging = succ_regions->staging;
  s.pred_staging = pred_regions->staging;

  s.from_pred = s.to_pred->recvImm();
  if (s.ranks > 2) s.from_succ = s.to_succ->recvImm();
  for (int peer = 0; peer < s.ranks; ++peer) {
    if (peer == s.rank || peer == pred || peer == succ) continue;
    s.others.push_back(&s.context.pair(peer));
    s.from_others.push_back(s.others.back()->recvImm());
  }
  s.slot_layer.assign(s.slots, 0);
  s.send_window = kWritesPerSlot * s.slots;
  // Credits beside the payload writes: at most one per slot is outstanding in practice.
  s.writes = std::make_unique<RingWriteWindow>(s.send_window + s.slots + 1);
  s.wake.reserve(s.others.size() + 3);
  if (s.to_succ->takesPayloadCrc(s.piece_floats * sizeof(float))) {
    for (uint64_t floats : s.floats) {
      const uint64_t piece = layerPieceFloats(floats, s.ranks, s.piece_floats);
      const uint64_t largest_segment = (floats + static_cast<uint64_t>(s.ranks) - 1) / static_cast<uint64_t>(s.ranks);
      s.send_crc_stride = std::max(s.send_crc_stride, (largest_segment + piece - 1) / piece);
    }
    const uint64_t entries = 2 * static_cast<uint64_t>(s.ranks - 1) * s.send_crc_stride;
    if (entries <= RingState::kMaxSendCrcs) s.send_crcs.assign(entries, 0);
  }
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<RingAllreduce>> RingAllreduce::start(transport::Context& context,
                                                            transport::bootstrap::Store& store,
                                                            std::vector<model::Layer> layers, RingOptions options,
                                                            Deadline deadline) {
  const std::string where = fmt::format("ring all-reduce set-up on rank {} of {}", context.rank(), context.size());
  if (context.size() < 1 || context.rank() < 0 || context.rank() >= context.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: rank {} of {} ranks, expected 0 <= rank < ranks", where,
                      context.rank(), context.size());
  }
  Status valid = checkOptions(options);
  if (!valid) return valid.withContext(where);
  auto offsets = layerOffsets(layers, context.size());
  if (!offsets) return offsets.status().withContext(where);

  auto state = std::make_unique<RingState>(context);
  state->rank = context.rank();
  state->ranks = context.size();
  for (const model::Layer& layer : layers) state->floats.push_back(layer.denseFloats());
  state->layers = std::move(layers);
  state->offsets = std::move(*offsets);
  state->piece_floats = options.piece_bytes / sizeof(float);
  state->slots = options.staging_slots;
  state->traffic.assign(state->layers.size(), RingTraffic{});
  Status connected = connectRing(*state, store, options, deadline);
  if (!connected) return connected.withContext(where);
  return std::unique_ptr<RingAllreduce>(new RingAllreduce(std::move(state)));
}

RingAllreduce::RingAllreduce(std::unique_ptr<RingState> state)
    : state_(std::move(state)), driver_(std::make_unique<scheme::SerialDriver>("ring all-reduce driver")) {}

RingAllreduce::~RingAllreduce() {
  driver_.reset();  // the running pass ends (by its deadline) before the memory goes; queued ones fail
  // A write still reading the buffer must finish before the memory is deregistered; a broken
  // pair fails its writes at once, so this waits only for writes that are about to complete.
  if (!state_->writes) return;
  const Deadline deadline = Deadline::after(kCloseWait);
  while (!state_->writes->empty()) {
    (void)state_->writes->oldest()->wait(deadline);
    state_->writes->pop();
  }
}

int RingAllreduce::rank() const { return state_->rank; }
int RingAllreduce::ranks() const { return state_->ranks; }
size_t RingAllreduce::layerCount() const { return state_->layers.size(); }
const model::Layer& RingAllreduce::layer(size_t layer) const {
  static const model::Layer kNone;
  return layer < state_->layers.size() ? state_->layers[layer] : kNone;
}

std::span<float> RingAllreduce::buffer(size_t layer) {
  if (layer >= state_->layers.size()) return {};
  return std::span<float>(state_->data.data() + state_->offsets[layer], state_->floats[layer]);
}

RingTraffic RingAllreduce::counters(size_t layer) const {
  std::lock_guard lock(state_->stats_mutex);
  return layer < state_->traffic.size() ? state_->traffic[layer] : RingTraffic{};
}

transport::RequestPtr RingAllreduce::start(size_t layer, Deadline deadline) {
  RingState& s = *state_;
  if (layer >= s.layers.size()) {
    return transport::failedRequest(
        fmt::format("ring all-reduce of layer {} on rank {}", layer, s.rank),
        makeStatus(StatusCode::kInvalidArgument, "expected a layer index below {}", s.layers.size()));
  }
  return driver_->submit(
      fmt::format("ring all-reduce of layer '{}' (#{}) on rank {}", s.layers[layer].name(), layer, s.rank),
      [&s, layer, deadline] {
        const auto name = [&] {
          return fmt::format("allreduce of layer '{}' (#{}) on rank {}", s.layers[layer].name(), layer, s.rank);
        };
        if (!s.broken.isOk()) return s.broken.withContext(name() + ": an earlier allreduce failed");
        if (deadline.expired()) {
          // Its turn came too late to keep the order every worker follows.
          s.broken =
              makeStatus(StatusCode::kTimeout, "{}: the deadline passed while the allreduces before it ran", name());
          return s.broken;
        }
        s.running.store(static_cast<int64_t>(layer), std::memory_order_release);
        Status status = runRingPass(s, layer, deadline);
        s.running.store(-1, std::memory_order_release);
        if (!status.isOk()) s.broken = status;
        return status;
      });
}

Status RingAllreduce::allreduce(size_t layer, Deadline deadline) {
  const transport::RequestPtr request = start(layer, deadline);
  (void)request->wait(deadline);
  if (request->test()) return request->status();
  // Past the deadline: a pass about to give its own verdict (which names the peer it waited for),
  // or one just done, gets a moment to say so.
  (void)request->wait(Deadline::after(kVerdictGrace));
  if (request->test()) return request->status();
  RingState& s = *state_;
  const int64_t running = s.running.load(std::memory_order_acquire);
  const std::string name =
      fmt::format("allreduce of layer '{}' (#{}) on rank {}", s.layers[layer].name(), layer, s.rank);
  if (running == static_cast<int64_t>(layer)) {
    return makeStatus(StatusCode::kTimeout, "{}: its pass ran past the deadline", name);
  }
  // Still queued: the driver fails it when its turn comes (its deadline has passed), which breaks
  // the ring, since this rank can no longer keep the order every worker follows.
  return makeStatus(StatusCode::kTimeout, "{}: the deadline passed while the call before it ({}) was still running",
                    name,
                    running >= 0 ? fmt::format("layer '{}'", s.layers[static_cast<size_t>(running)].name())
                                 : std::string("an earlier layer"));
}

scheme::Traffic RingAllreduce::traffic(size_t layer) const {
  const RingTraffic c = counters(layer);
  return {c.calls, c.sent_bytes, c.sent_messages, c.received_bytes, c.received_messages};
}

}  // namespace poseidon::ring
