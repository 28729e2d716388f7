// SfSlotLayout: where each layer's factors sit in an SFB worker's two registered buffers.
//
// The layers are model layers (model/layer.h), all fully connected: U is rows x K and V is cols x K
// with rows and cols from Layer::fc() and K the per-worker batch, given once for all layers.
// Send buffer: per layer, this worker's U (rows x K, row-major) followed at once by its V
// (cols x K, row-major), so one write carries both, and both are in the layout
// kernels::SfUpdate reads.
// Receive buffer: per layer, two banks (iteration parity), each with one slot per peer (every
// rank but the owner, in rank order); a slot holds a peer's U and V exactly as in its send
// buffer. Slots start on 64-byte boundaries so every U_p starts on a cache line.
// Every worker computes the same layout from the same layers, so a writer knows the offset of
// its slot in any peer's buffer without asking; the fingerprint lets start() check that all
// workers were given the same layers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "model/layer.h"

namespace poseidon::sfb {

class SfSlotLayout {
 public:
  // Fails, naming the layer and the value, for no layers, more than kSfMaxLayers (sf_imm.h), a
  // layer that is not fully connected, zero rows or cols, a batch K of 0, workers < 1, or buffers
  // whose size overflows.
  static Result<SfSlotLayout> build(std::span<const model::Layer> layers, uint64_t batch, int workers);

  int workers() const { return workers_; }
  size_t layerCount() const { return layers_.size(); }
  const model::Layer& layer(size_t l) const { return layers_[l]; }
  // K: the rank of every worker's factors (its batch).
  size_t batch() const { return batch_; }

  // Floats of one worker's factors of layer l: rows * K of U, then cols * K of V.
  size_t uFloats(size_t l) const { return layers_[l].fc().rows * batch_; }
  size_t factorFloats(size_t l) const { return uFloats(l) + layers_[l].fc().cols * batch_; }

  // Offsets and sizes in floats.
  size_t sendOffset(size_t l) const { return send_offsets_[l]; }
  size_t sendFloats() const { return send_floats_; }
  // The slot of `writer`'s factors of layer l for `iteration` in `owner`'s receive buffer
  // (owner != writer, both < workers()).
  size_t slotOffset(size_t l, uint64_t iteration, int owner, int writer) const;
  size_t receiveFloats() const { return receive_floats_; }

  // CRC32C of the worker count and every layer's name and shape (rows, cols, K), in order.
  uint32_t fingerprint() const { return fingerprint_; }

 private:
  SfSlotLayout() = default;

  int workers_ = 0;
  std::vector<model::Layer> layers_;
  size_t batch_ = 0;
  std::vector<size_t> send_offsets_;
  std::vector<size_t> receive_offsets_;  // layer l's bank 0; bank 1 follows
  std::vector<size_t> slot_strides_;     // factorFloats rounded up to 64 bytes
  size_t send_floats_ = 0;
  size_t receive_floats_ = 0;
  uint32_t fingerprint_ = 0;
};

}  // namespace poseidon::sfb
