// The Adam scheme's layers (Project Adam, OSDI'14; the papers' "Poseidon-Adam" comparator): which
// server holds each fully-connected layer, and where each layer's bytes sit in the memory the
// workers and servers register. Every worker and server builds the same AdamLayout from the same
// layer list, so a writer knows the offset it writes at without asking; the fingerprint lets each
// side check at start that the other was given the same layers.
//
// Worker buffers (floats, layers back to back in layer order):
//   factors    per layer U (rows x rank, row-major) then at once V (cols x rank, row-major): the
//              layout kernels::SfUpdate reads, and one write carries both.
//   gradients  per layer G (rows x cols, row-major), written by the layer's server.
// Server buffer: for each layer it holds, in layer order, one slot per worker in rank order, each
// holding that worker's U and V exactly as in its factor buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "scheme/factor_layer.h"
#include "common/status.h"

namespace poseidon::adam {

// An FC layer as every factor scheme sees it: M x N weight, factors of rank K (scheme/factor_layer.h).
using AdamLayer = scheme::FactorLayer;

// The placement both sides use: layer l is held by server l % servers. With one server this is
// [Poseidon 2015]'s single master node (its Fig. 4(c)); with more, round robin spreads the layers, and so
// the scheme's hot nodes, over them.
constexpr int adamServerOf(size_t layer, int servers) {
  return static_cast<int>(layer % static_cast<size_t>(servers));
}

class AdamLayout {
 public:
  // Fails, naming the layer and the value, for no layers, more layers than the immediate can name
  // (kAdamMaxLayers, adam_protocol.h), rows, cols or rank of 0, workers outside 1..kAdamMaxWorkers,
  // servers < 1, or a buffer whose size in bytes overflows.
  static Result<AdamLayout> build(std::span<const AdamLayer> layers, int workers, int servers);
  // The layout of a job on a context of `ranks` ranks: ranks 0..workers-1 are the workers, the
  // others the servers (server s is rank workers + s). Fails, besides, unless 1 <= workers < ranks.
  static Result<AdamLayout> forContext(std::span<const AdamLayer> layers, int workers, int ranks);

  int workers() const { return workers_; }
  int servers() const { return servers_; }
  size_t layerCount() const { return layers_.size(); }
  const AdamLayer& layer(size_t l) const { return layers_[l]; }
  // "layer 3 'fc6'": how messages name a layer.
  std::string describe(size_t l) const;

  int serverOf(size_t l) const { return adamServerOf(l, servers_); }
  // The layers `server` holds, ascending; layer l is entry l / servers() of its server's list.
  std::vector<size_t> layersOf(int server) const;

  // Floats of one worker's factors of layer l (U then V) and of its gradient.
  size_t uFloats(size_t l) const { return layers_[l].rows * layers_[l].rank; }
  size_t factorFloats(size_t l) const { return uFloats(l) + layers_[l].cols * layers_[l].rank; }
  size_t gradientFloats(size_t l) const { return layers_[l].rows * layers_[l].cols; }

  // Offsets and totals in floats, as the file comment lays them out.
  size_t factorOffset(size_t l) const { return factor_offsets_[l]; }
  size_t factorTotal() const { return factor_total_; }
  size_t gradientOffset(size_t l) const { return gradient_offsets_[l]; }
  size_t gradientTotal() const { return gradient_total_; }
  // `worker`'s slot of layer l in the slot buffer of serverOf(l).
  size_t slotOffset(size_t l, int worker) const {
    return slot_offsets_[l] + static_cast<size_t>(worker) * factorFloats(l);
  }
  size_t slotTotal(int server) const { return slot_totals_[static_cast<size_t>(server)]; }

  // CRC32C of the worker and server counts and every layer's name and shape, in order.
  uint32_t fingerprint() const { return fingerprint_; }

 private:
  AdamLayout() = default;

  int workers_ = 0;
  int servers_ = 0;
  std::vector<AdamLayer> layers_;
  std::vector<size_t> factor_offsets_;
  std::vector<size_t> gradient_offsets_;
  std::vector<size_t> slot_offsets_;  // layer l's first slot in its server's buffer
  std::vector<size_t> slot_totals_;   // per server
  size_t factor_total_ = 0;
  size_t gradient_total_ = 0;
  uint32_t fingerprint_ = 0;
};

}  // namespace poseidon::adam
