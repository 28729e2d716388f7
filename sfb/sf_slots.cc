#include "sfb/sf_slots.h"

#include <fmt/format.h>

#include "sfb/sf_imm.h"
#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::sfb {

namespace {

constexpr size_t kSlotAlignFloats = 64 / sizeof(float);

// a * b + c, false on overflow.
bool mulAdd(size_t a, size_t b, size_t c, size_t& out) {
  size_t product = 0;
  return !__builtin_mul_overflow(a, b, &product) && !__builtin_add_overflow(product, c, &out);
}

uint32_t crcOf(uint64_t value, uint32_t crc) {
  uint8_t bytes[8];
  transport::wire::storeLe64(bytes, value);
  return transport::wire::crc32c(bytes, sizeof bytes, crc);
}

}  // namespace

Result<SfSlotLayout> SfSlotLayout::build(std::span<const model::Layer> layers, uint64_t batch, int workers) {
  if (workers < 1) return makeStatus(StatusCode::kInvalidArgument, "SFB needs >= 1 worker, got {}", workers);
  if (layers.empty()) return makeStatus(StatusCode::kInvalidArgument, "SFB needs >= 1 layer, got none");
  if (layers.size() > kSfMaxLayers) {
    return makeStatus(StatusCode::kInvalidArgument, "SFB takes at most {} layers (the immediate's layer field), got {}",
                      kSfMaxLayers, layers.size());
  }
  if (batch == 0)
    return makeStatus(StatusCode::kInvalidArgument, "SFB needs a batch K >= 1 (the factors' rank), got 0");
  SfSlotLayout layout;
  layout.workers_ = workers;
  layout.batch_ = static_cast<size_t>(batch);
  layout.layers_.assign(layers.begin(), layers.end());
  const size_t peers = static_cast<size_t>(workers) - 1;
  uint32_t crc = crcOf(static_cast<uint64_t>(workers), crcOf(layers.size(), 0));
  for (size_t l = 0; l < layers.size(); ++l) {
    const model::Layer& layer = layers[l];
    if (!layer.isFullyConnected()) {
      return makeStatus(
          StatusCode::kInvalidArgument,
          "SFB layer {} '{}' is {}, expected a fully-connected layer (only those have sufficient factors)", l,
          layer.name(), model::layerKindName(layer.kind()));
    }
    const size_t rows = layer.fc().rows, cols = layer.fc().cols, rank = layout.batch_;
    if (rows == 0 || cols == 0) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "SFB layer {} '{}' is {}x{} with rank {}; rows, cols and rank must be >= 1", l, layer.name(),
                        rows, cols, rank);
    }
    // factor = K(M + N); slot = factor rounded up; send += factor; receive += 2 * peers * slot.
    size_t width = 0, factor = 0, slot = 0, send = 0, receive = 0;
    const bool fits = !__builtin_add_overflow(rows, cols, &width) && mulAdd(rank, width, 0, factor) &&
                      mulAdd(1, factor, kSlotAlignFloats - 1, slot) && mulAdd(1, factor, layout.send_floats_, send) &&
                      mulAdd(2 * peers, slot / kSlotAlignFloats * kSlotAlignFloats, layout.receive_floats_, receive) &&
                      receive <= SIZE_MAX / sizeof(float) && send <= SIZE_MAX / sizeof(float);
    if (!fits) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "SFB layer {} '{}' ({}x{}, rank {}) on {} workers overflows the buffer sizes", l, layer.name(),
                        rows, cols, rank, workers);
    }
    layout.send_offsets_.push_back(layout.send_floats_);
    layout.receive_offsets_.push_back(layout.receive_floats_);
    layout.slot_strides_.push_back(slot / kSlotAlignFloats * kSlotAlignFloats);
    layout.send_floats_ = send;
    layout.receive_floats_ = receive;
    crc = crcOf(layer.name().size(), crc);
    crc = transport::wire::crc32c(layer.name().data(), layer.name().size(), crc);
    crc = crcOf(layer.fc().bias ? 1 : 0, crcOf(rank, crcOf(cols, crcOf(rows, crc))));
  }
  layout.fingerprint_ = crc;
  return layout;
}

size_t SfSlotLayout::slotOffset(size_t l, uint64_t iteration, int owner, int writer) const {
  // The owner has no slot of its own: peers below it keep their rank, those above shift down.
  const size_t peer = static_cast<size_t>(writer < owner ? writer : writer - 1);
  const size_t peers = static_cast<size_t>(workers_) - 1;
  const size_t bank = static_cast<size_t>(iteration & 1);
  return receive_offsets_[l] + (bank * peers + peer) * slot_strides_[l];
}

}  // namespace poseidon::sfb
