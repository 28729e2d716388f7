#include "adam/adam_layer.h"

#include <fmt/format.h>

#include "adam/adam_protocol.h"
#include "transport/wire/crc32c.h"

namespace poseidon::adam {

namespace {

// total += count * each, false when any step overflows or the total's bytes would not fit a size_t.
bool addProduct(size_t& total, size_t count, size_t each) {
  size_t product = 0;
  size_t sum = 0;
  if (__builtin_mul_overflow(count, each, &product) || __builtin_add_overflow(total, product, &sum)) return false;
  if (sum > SIZE_MAX / sizeof(float)) return false;
  total = sum;
  return true;
}

uint32_t mixIn(uint32_t crc, uint64_t value) { return transport::wire::crc32c(&value, sizeof(value), crc); }

}  // namespace

Result<AdamLayout> AdamLayout::build(std::span<const model::Layer> layers, uint64_t batch, int workers, int servers) {
  if (workers < 1 || workers > kAdamMaxWorkers) {
    return makeStatus(StatusCode::kInvalidArgument, "Adam job with {} workers; expected 1..{}", workers,
                      kAdamMaxWorkers);
  }
  if (servers < 1) return makeStatus(StatusCode::kInvalidArgument, "Adam job with {} servers; expected >= 1", servers);
  if (layers.empty() || layers.size() > kAdamMaxLayers) {
    return makeStatus(StatusCode::kInvalidArgument, "Adam job with {} layers; expected 1..{} (the immediate's field)",
                      layers.size(), kAdamMaxLayers);
  }
  if (batch == 0) return makeStatus(StatusCode::kInvalidArgument, "Adam job with batch K = 0; expected >= 1");
  AdamLayout layout;
  layout.batch_ = static_cast<size_t>(batch);
  layout.workers_ = workers;
  layout.servers_ = servers;
  layout.layers_.assign(layers.begin(), layers.end());
  layout.slot_totals_.assign(static_cast<size_t>(servers), 0);
  uint32_t crc = mixIn(mixIn(mixIn(0, layers.size()), static_cast<uint64_t>(workers)), static_cast<uint64_t>(servers));
  for (size_t l = 0; l < layers.size(); ++l) {
    const model::Layer& layer = layers[l];
    if (!layer.isFullyConnected()) {
      return makeStatus(StatusCode::kInvalidArgument, "Adam {} is {}, expected a fully-connected layer",
                        layout.describe(l), model::layerKindName(layer.kind()));
    }
    const size_t rows = layer.fc().rows, cols = layer.fc().cols, rank = layout.batch_;
    if (rows == 0 || cols == 0) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "Adam {} is {} x {} with rank {}; rows, cols and rank must all be >= 1", layout.describe(l),
                        rows, cols, rank);
    }
    size_t factor = 0;
    size_t& slots = layout.slot_totals_[static_cast<size_t>(layout.serverOf(l))];
    layout.factor_offsets_.push_back(layout.factor_total_);
    layout.gradient_offsets_.push_back(layout.gradient_total_);
    layout.slot_offsets_.push_back(slots);
    // Each step checked: factor = K*M + K*N, then the three buffers grow by their share.
    const bool fits = addProduct(factor, rank, rows) && addProduct(factor, rank, cols) &&
                      addProduct(layout.factor_total_, 1, factor) &&
                      addProduct(layout.gradient_total_, 1, static_cast<size_t>(layer.params())) &&
                      addProduct(slots, static_cast<size_t>(workers), factor);
    if (!fits) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "Adam {} ({} x {}, rank {}) with {} workers makes a buffer too large to address",
                        layout.describe(l), rows, cols, rank, workers);
    }
    crc = transport::wire::crc32c(layer.name().data(), layer.name().size(), mixIn(crc, layer.name().size()));
    crc = mixIn(mixIn(mixIn(mixIn(crc, rows), cols), rank), layer.fc().bias ? 1 : 0);
  }
  layout.fingerprint_ = crc;
  return layout;
}

Result<AdamLayout> AdamLayout::forContext(std::span<const model::Layer> layers, uint64_t batch, int workers,
                                          int ranks) {
  if (workers < 1 || workers >= ranks) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "Adam job with {} workers in a context of {} ranks; expected 1..{}, leaving a rank for a server",
                      workers, ranks, ranks - 1);
  }
  return build(layers, batch, workers, ranks - workers);
}

std::string AdamLayout::describe(size_t l) const { return fmt::format("layer {} '{}'", l, layers_[l].name()); }

std::vector<size_t> AdamLayout::layersOf(int server) const {
  std::vector<size_t> held;
  for (size_t l = static_cast<size_t>(server); l < layers_.size(); l += static_cast<size_t>(servers_)) {
    held.push_back(l);
  }
  return held;
}

}  // namespace poseidon::adam
