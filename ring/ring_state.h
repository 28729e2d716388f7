// RingState: what a ring all-reduce keeps between calls. ring_allreduce.cc builds it at start and
// queues the calls; ring_pass.cc runs one call on it.
//
// Flow control lives here, not in a call, because it spans calls: the predecessor may write the
// first pieces of our next call into slots we freed at the end of this one, and the successor
// may free slots of this call's pieces after we returned.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ring/ring_allreduce.h"
#include "ring/ring_write_window.h"
#include "transport/context.h"
#include "transport/memory.h"
#include "transport/pair.h"

namespace poseidon::ring {

struct RingState {
  explicit RingState(transport::Context& c) : context(c) {}

  transport::Context& context;
  int rank = 0;
  int ranks = 1;
  transport::Pair* to_pred = nullptr;    // null when ranks == 1
  transport::Pair* to_succ = nullptr;    // the same pair as to_pred when ranks == 2
  std::vector<transport::Pair*> others;  // the context's other pairs, watched for failure

  std::vector<model::Layer> layers;
  std::vector<uint64_t> floats;   // per layer: its denseFloats(), what its buffer holds
  std::vector<uint64_t> offsets;  // floats before each layer in `data`
  uint64_t piece_floats = 0;
  size_t slots = 0;
  std::vector<float> data;     // every layer back to back
  std::vector<float> staging;  // `slots` pieces the predecessor writes into
  std::unique_ptr<transport::MemoryRegion> data_region;
  std::unique_ptr<transport::MemoryRegion> staging_region;
  transport::RemoteDescriptor succ_data;
  transport::RemoteDescriptor succ_staging;
  transport::RemoteDescriptor pred_staging;  // a credit is a zero-length write into it

  // The next notification from each neighbour, posted ahead. With two ranks from_pred carries
  // the successor's credits too and from_succ is null. A completed from_pred that belongs to
  // the next call is left completed for it.
  transport::RequestPtr from_pred;
  transport::RequestPtr from_succ;
  // One posted notification per other pair: it completes only if that pair breaks (or its
  // peer, not a ring neighbour, writes to us: a protocol error).
  std::vector<transport::RequestPtr> from_others;

  uint64_t pieces_sent = 0;        // reduce-scatter pieces ever written into the successor's staging
  uint64_t credits_received = 0;   // of those, the ones the successor freed
  uint64_t pieces_staged = 0;      // reduce-scatter pieces the predecessor ever wrote into ours
  std::vector<size_t> slot_layer;  // the layer whose piece fills each successor slot (credits count there)
  size_t send_window = 0;          // payload writes allowed in flight; the window holds credits besides
  std::unique_ptr<RingWriteWindow> writes;
  std::vector<transport::Request*> wake;  // scratch for waiting on several requests, sized at start
  // The CRC32C of each piece this rank sends after adding it, taken as the add wrote it
  // (ring_pass.cc), so the transport need not read the piece again: entry step * send_crc_stride
  // + piece, bit 32 set once known. Sized at start for the layer of most pieces; empty when the
  // successor's pair takes no caller CRC (transport::Pair::takesPayloadCrc) or the table would
  // outgrow kMaxSendCrcs.
  static constexpr uint64_t kMaxSendCrcs = uint64_t{1} << 16;
  std::vector<uint64_t> send_crcs;
  uint64_t send_crc_stride = 0;

  mutable std::mutex stats_mutex;
  std::vector<RingTraffic> traffic;

  std::atomic<int64_t> running{-1};  // the layer whose pass runs, or -1
  // The first failure: every later pass returns it. Only the driver's thread runs passes, so
  // only it reads or writes this.
  Status broken;
};

// One allreduce of `layer` (an index the caller checked), on the driver's thread.
Status runRingPass(RingState& state, size_t layer, Deadline deadline);

}  // namespace poseidon::ring
