// Syncer: one scheme's way of synchronising a layer of this worker's replica, behind the one
// non-blocking call every scheme shares (PyTorch c10d's Work, NCCL's requests).
//
// start() does at once what cannot block (loading the gradient into the scheme's registered
// buffer, posting writes, a push and a pull) and returns a request; the rest (waiting for peers,
// the reduction, the optimizer step) finishes on the scheme's driver thread. The request
// completes once params(layer) of the replica hold the iteration's update, or fails naming the
// scheme, the layer and the peer, by the deadline given to start() at the latest (or, queued
// behind syncs of the same scheme with later deadlines, as soon as its turn comes). So a waiter
// never hangs, and syncs of different layers and schemes can be in flight at once: this is what
// lets wait-free backpropagation overlap a layer's sync with the backward pass of the layers
// below it ([Poseidon ATC'17] section 3.1).
//
// Every worker starts a scheme's layers in the same order (a ring's, SFB's and Adam's syncs finish
// in start order, the PS's in the order their parameters come back); between a layer's start() and the completion of
// its request, its gradient, factors and parameters belong to the syncer.
#pragma once

#include <cstdint>

#include "common/deadline.h"
#include "common/status.h"
#include "scheme/scheme.h"
#include "scheme/traffic.h"
#include "transport/request.h"

namespace poseidon::trainer {

class Syncer {
 public:
  virtual ~Syncer() = default;

  virtual scheme::Scheme scheme() const = 0;
  // Starts the layer's sync for `iteration` (0-based: the optimizer step it applies).
  virtual transport::RequestPtr start(size_t layer, uint64_t iteration, Deadline deadline) = 0;
  // What this worker's syncs of the layer moved so far (payload; scheme/traffic.h).
  virtual scheme::Traffic traffic(size_t layer) const = 0;
  // Tells the scheme's servers, if it has any, that this worker is done.
  virtual Status finish(Deadline deadline) = 0;
};

}  // namespace poseidon::trainer
