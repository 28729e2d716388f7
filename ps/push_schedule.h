// PushSchedule: how a parameter-server worker paces and orders its pushes (ps/README.md).
#pragma once

#include <cstdint>

namespace poseidon::ps {

// How a worker paces and orders its pushes; the layers above (the Session, HybridSync,
// ServerOptimizedSync) pass it through whole.
struct PushSchedule {
  // Pushed bytes per server that may await acknowledgement (at least one chunk always goes):
  // acks then pace a fast worker to the aggregation instead of letting it fill the server's
  // link ahead of the slowest one. 4 MiB measured best at 1 Gbit/s with 2 MiB chunks.
  uint64_t window_bytes = uint64_t{4} << 20;
  // Which held-back chunk goes first when the window opens: false, the one that became ready
  // first; true, the one nearest the model's input (lowest chunk index), so that a layer the next
  // forward pass needs soon overtakes a large gradient between its chunks (ByteScheduler's
  // priority with the window as its credit). Every worker of a job sets it alike: under BSP a
  // reordering worker has the servers announce the chunks others pushed first (ToWorker::kAwaited)
  // and sends those past its window, so two workers whose windows each hold what the other has not
  // sent never wait on each other; a worker without it would. The servers then answer this
  // worker's pulls in the same order (ps/param_send_queue.h), so the first layers' parameters
  // overtake a large layer's on the way back too. On by default: so measured it won or tied in
  // each of eight trace runs (VGG19 and GoogLeNet, PS and closed form, scaled 10 and 1 Gbit/s;
  // README), where pushes alone won one.
  bool priority = true;
};

}  // namespace poseidon::ps
