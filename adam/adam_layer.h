// The Adam scheme's layers (Project Adam, OSDI'14; the papers' "Poseidon-Adam" comparator): which
// server holds each fully-connected layer, and where each layer's bytes sit in the memory the
// workers and servers register. Every worker and server builds the same AdamLayout from the same
// layer list, so a writer knows the offset it writes at without asking; the fingerprint lets each
// side check at start that the other was given the same layers.
//
// The layers are model layers (model/layer.h), all fully connected: rows and cols from
// Layer::fc(), and the rank of every factor is K, the per-worker batch, given once. A layer's bias
// (Layer::fc().bias) comes back with its gradient: the servers form it from the workers' U
// (kernels/sf_bias.h), so it costs M floats on the way back and nothing on the way there.
//
// Worker buffers (floats, layers back to back in layer order):
//   factors    per layer U (rows x K, row-major) then at once V (cols x K, row-major): the
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

#include "common/status.h"
#include "model/layer.h"

namespace poseidon::adam {

// The placement both sides use: layer l is held by server l % servers. With one server this is
// [Poseidon 2015]'s single master node (its Fig. 4(c)); with more, round robin spreads the layers, and so
// the scheme's hot nodes, over them.
constexpr int adamServerOf(size_t layer, int servers) { return static_cast<int>(layer % static_cast<size_t>(servers)); }

class AdamLayout {
 public:
  // Fails, naming the layer and the value, for no layers, more layers than the immediate can name
  // (kAdamMaxLayers, adam_protocol.h), a layer that is not fully connected, rows, cols or batch K
  // of 0, workers outside 1..kAdamMaxWorkers, servers < 1, or a buffer whose size in bytes
  // overflows.
  static Result<AdamLayout> build(std::span<const model::Layer> layers, uint64_t batch, int workers, int servers);
  // The layout of a job on a context of `ranks` ranks: ranks 0..workers-1 are the workers, the
  // others the servers (server s is rank workers + s). Fails, besides, unless 1 <= workers < ranks.
  static Result<AdamLayout> forContext(std::span<const model::Layer> layers, uint64_t batch, int workers, int ranks);

  int workers() const { return workers_; }
  int servers() const { return servers_; }
  size_t layerCount() const { return layers_.size(); }
  const model::Layer& layer(size_t l) const { return layers_[l]; }
  // K: the rank of every worker's factors.
  size_t batch() const { return batch_; }
  // "layer 3 'fc6'": how messages name a layer.
  std::string describe(size_t l) const;

  int serverOf(size_t l) const { return adamServerOf(l, servers_); }
  // The layers `server` holds, ascending; layer l is entry l / servers() of its server's list.
  std::vector<size_t> layersOf(int server) const;

  // Floats of one worker's factors of layer l (U then V) and of its gradient (the M x N weight's,
  // then the M biases' when the layer has a bias: Layer::params()).
  size_t uFloats(size_t l) const { return layers_[l].fc().rows * batch_; }
  size_t factorFloats(size_t l) const { return uFloats(l) + layers_[l].fc().cols * batch_; }
  size_t gradientFloats(size_t l) const { return static_cast<size_t>(layers_[l].params()); }

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

  // CRC32C of the worker and server counts and every layer's name and shape (rows, cols, K), in
  // order.
  uint32_t fingerprint() const { return fingerprint_; }

 private:
  AdamLayout() = default;

  int workers_ = 0;
  int servers_ = 0;
  std::vector<model::Layer> layers_;
  size_t batch_ = 0;
  std::vector<size_t> factor_offsets_;
  std::vector<size_t> gradient_offsets_;
  std::vector<size_t> slot_offsets_;  // layer l's first slot in its server's buffer
  std::vector<size_t> slot_totals_;   // per server
  size_t factor_total_ = 0;
  size_t gradient_total_ = 0;
  uint32_t fingerprint_ = 0;
};

}  // namespace poseidon::adam
