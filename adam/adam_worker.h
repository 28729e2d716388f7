// AdamWorker: one worker of the Adam scheme (see adam_server.h). Per fully-connected layer and
// iteration it writes its sufficient factors U and V in one write into its slot on the server
// that holds the layer, and receives the full aggregate gradient G = sum_p U_p V_p^T back in a
// registered buffer; applying the optimizer to G is the caller's (as with every scheme here).
//
// Per layer the calls alternate: fill u(l) and v(l), push(l), wait(l), read gradient(l), and again.
// Layers are independent, so a trainer pushes layer L during backprop and waits for it before the
// next forward pass of L (WFBP). The calls may come from any threads. One thread per server waits
// on that server's ordered stream of immediates and checks each (adam_protocol.h).
#pragma once

#include <memory>
#include <span>

#include "adam/adam_layer.h"
#include "model/layer.h"
#include "scheme/traffic.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"
#include "transport/request.h"

namespace poseidon::adam {

class AdamWorker {
 public:
  // Registers this worker's factor, gradient and notice buffers (once, reused every iteration),
  // publishes the last two in the store, fetches every server's slot buffer and starts a thread
  // per server. `context` must be connected, be rank < workers, and outlive the worker; ranks
  // workers..size-1 are the servers and every rank must be given the same layers (the model's FC
  // layers) and batch K (the factors' rank).
  static Result<std::unique_ptr<AdamWorker>> start(transport::Context& context, transport::bootstrap::Store& store,
                                                   std::span<const model::Layer> layers, uint64_t batch, int workers,
                                                   Deadline deadline);
  virtual ~AdamWorker() = default;

  virtual int worker() const = 0;
  virtual const AdamLayout& layout() const = 0;

  // This worker's factors of layer l, row-major: U is rows x K, V is cols x K (the layout
  // kernels::SfUpdate reads). Fill them before push(l); they are read until wait(l) returns OK.
  virtual std::span<float> u(size_t l) = 0;
  virtual std::span<float> v(size_t l) = 0;
  // G of layer l (rows x cols, row-major) of the iteration whose wait(l) returned OK last. It stays
  // until this worker pushes l again (the server writes the next G only after every worker did).
  virtual std::span<const float> gradient(size_t l) const = 0;

  // Sends U and V of layer l for this worker's next iteration of l (one write, not waiting for it).
  // kInvalidArgument for a layer out of range, a push before wait() returned the previous
  // iteration's gradient, or one after finish(); the server's failure when it has failed.
  virtual Status push(size_t l) = 0;
  // Blocks until G of layer l's last pushed iteration has landed and the factors' write finished.
  // Fails with the server's reason when it gave up (naming the worker that broke the iteration),
  // a broken connection naming the server, or kTimeout naming the server, the layer, the iteration
  // and, when the server reported one, the worker whose factors it still waits for.
  virtual Status wait(size_t l, Deadline deadline) = 0;

  // Non-blocking: push(l), then wait(l, deadline) on the worker's driver thread. The request
  // completes once gradient(l) holds this iteration's G, or fails naming the server, the layer and
  // the laggard, by `deadline` at the latest (or, queued behind waits with later deadlines, as soon
  // as its turn comes). Starts finish in start order.
  virtual transport::RequestPtr start(size_t l, Deadline deadline) = 0;

  // Tells every server this worker is done. Call after the last wait() of every layer; the
  // gradients stay readable until the worker is destroyed.
  virtual Status finish(Deadline deadline) = 0;

  // This worker's traffic for layer l, summed over iterations: the factors pushed and the G
  // received, payload bytes and messages, to compare with adamWorkerTraffic() (cost_model.h)
  // times the iterations. The goodbyes and the server's notices are not the scheme's traffic.
  virtual scheme::Traffic traffic(size_t l) const = 0;
};

}  // namespace poseidon::adam
