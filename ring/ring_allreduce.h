// RingAllreduce: sums a gradient over the P1 workers with a ring (NCCL's algorithm: a
// reduce-scatter, then an all-gather), moved by one-sided writes.
//
// The workers are the ranks of one connected transport::Context; this object owns the
// notifications (recvImm) of every pair of that context, so nothing else may use it, and it
// serves one RingAllreduce for its life (the notifications posted ahead stay posted after this
// object is gone, so a second one on the same context would miss its first). start()
// registers, once, a buffer holding every layer's floats back to back plus a receive staging of
// `staging_slots` pieces, and publishes both through the store.
//
// One allreduce(layer) on rank r (see ring_geometry.h for the segments and steps):
// - reduce-scatter, P1-1 steps: in step t, r writes segment (r - t) into its successor's staging;
//   the successor adds it into its own copy. After them r holds the full sum of segment r + 1.
// - all-gather, P1-1 steps: the finished segments travel once round the ring, written straight
//   into the successor's buffer.
// - pipelining: a segment travels in pieces of piece_bytes (smaller for small layers, at least
//   four per segment: layerPieceFloats in ring_geometry.h), and each piece goes on as soon as its
//   predecessor step delivered it, so the write of piece j+1 overlaps the add of piece j and the
//   steps overlap each other. Staging slots are reused under explicit credits: after adding a
//   piece the receiver frees its slot with a zero-length write whose immediate says so, and a
//   sender never has more pieces in its successor's staging than there are slots.
// - order of the sum: segment c (= [floor(cX/P1), floor((c+1)X/P1)) of the layer's X floats) is
//   summed exactly once, by its pass round the ring: g_c + g_(c+1) + ... + g_(c+P1-1) (ranks mod
//   P1), added left to right, rank c's gradient first. The all-gather copies the bytes, so every
//   rank ends with bit-identical floats, and the same inputs give the same bits on every run.
//
// Calls are non-blocking and serialised: start() queues the layer's pass and returns a request at
// once; the passes run one at a time on the object's driver thread, in the order they were started
// (one queue, like NCCL's single stream). Every worker must start the same layers in the same
// order. A pass fails, naming the peer, when a peer sends anything but what the protocol expects
// next, when a pair of the context breaks, or when its deadline passes (naming whom it waited
// for); a pass whose deadline passed while earlier ones ran fails as soon as its turn comes. The
// object is then broken: every later pass returns that first failure, since the peers' positions
// in the protocol are unknown.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "model/layer.h"
#include "scheme/serial_driver.h"
#include "scheme/traffic.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::ring {

struct RingOptions {
  // The unit of pipelining, a multiple of 4 in [4, 1 GiB]: a segment travels in pieces of this size.
  size_t piece_bytes = size_t{1} << 20;
  // Receive staging, in pieces (1..1024): how many reduce-scatter pieces a predecessor may have
  // written ahead of our adds (NCCL keeps 8).
  size_t staging_slots = 8;
  // Store keys are "<name>/<context name>/rank/<r>": unique per RingAllreduce within a job
  // (keys are write-once, an old object's would be read as this one's).
  std::string name = "ring_allreduce";
};

// What one rank moved for one layer, summed over its calls. Payload is the layer's floats in
// pieces; credits are control messages (zero-length writes) and are not in the payload bytes.
struct RingTraffic {
  uint64_t calls = 0;           // allreduce() calls that succeeded
  uint64_t steps = 0;           // ring steps completed: 2(P1-1) per call
  uint64_t sent_bytes = 0;      // payload written into the successor
  uint64_t received_bytes = 0;  // payload the predecessor wrote into us
  // The cost model's messages (trainer::ringNodeTraffic): one per step whose segment is not empty,
  // each way; its pieces are pipelined behind it on the same pair.
  uint64_t sent_messages = 0;
  uint64_t received_messages = 0;
  uint64_t sent_pieces = 0;  // one-sided writes carrying payload
  uint64_t received_pieces = 0;
  uint64_t credits_sent = 0;      // staging slots we freed for the predecessor
  uint64_t credits_received = 0;  // slots the successor freed for pieces of this layer
};

struct RingState;

class RingAllreduce {
 public:
  // Every rank of `context` calls this with the same layers and options. A layer's buffer holds
  // its Layer::denseFloats(): every parameter of a conv or other layer, the M x N weight of a
  // fully-connected one (HybridSync gives the ring "other" layers of every parameter, so an FC
  // layer's bias travels too). A layer of no floats is allowed: its allreduce moves nothing. Fails, naming the value and
  // what was expected, on bad options or layers, a neighbour whose layers or options differ, or a
  // neighbour that does not publish its regions by the deadline.
  static Result<std::unique_ptr<RingAllreduce>> start(transport::Context& context, transport::bootstrap::Store& store,
                                                      std::vector<model::Layer> layers, RingOptions options,
                                                      Deadline deadline);
  // Waits (bounded) for this rank's writes still in flight before deregistering the memory.
  ~RingAllreduce();
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  int rank() const;
  int ranks() const;
  size_t layerCount() const;
  // The layer as given to start(); an empty one for an index out of range.
  const model::Layer& layer(size_t layer) const;

  // Where the worker puts layer's gradient; after allreduce(layer) it holds the sum over the
  // workers. Empty for a layer index out of range. Must not be touched during that layer's call.
  std::span<float> buffer(size_t layer);

  // Non-blocking: queues the sum of buffer(layer) over the workers (see the top of this file) and
  // returns a request that completes once buffer(layer) holds it, or fails naming the peer, by
  // `deadline` at the latest (or, queued behind passes with later deadlines, as soon as its turn
  // comes). Leave buffer(layer) alone until then.
  transport::RequestPtr start(size_t layer, Deadline deadline);
  // start(layer, deadline) and its wait; returns by `deadline` (a call still queued behind an
  // earlier one then fails, and the ring with it, as with any pass that misses its deadline).
  Status allreduce(size_t layer, Deadline deadline);

  // What the layer's passes moved, as every scheme reports it. Any thread, any time.
  scheme::Traffic traffic(size_t layer) const;
  // The ring's own counters of `layer` (zeros for an index out of range): steps, pieces, credits.
  RingTraffic counters(size_t layer) const;

 private:
  explicit RingAllreduce(std::unique_ptr<RingState> state);

  std::unique_ptr<RingState> state_;
  std::unique_ptr<scheme::SerialDriver> driver_;  // runs the passes; stopped first in the destructor
};

}  // namespace poseidon::ring
