// Client: a worker's side of the parameter server.
//
// The model lives in two registered buffers laid out like the chunk layout (tensors back to
// back): parameters() and gradients(). The trainer computes in them directly: a pull lands the
// servers' chunks straight in parameters(), a push writes gradients() straight into the servers'
// slots (one-sided writes, no copies). Calls are non-blocking and per layer, so a trainer can
// push a layer's gradient the moment backprop produced it and pull it back while the layers
// below still compute (WFBP).
//
// The unit of push() and pull() is a layer of the model (model::Model::layers(), its tensors
// [layerStarts()[l], layerStarts()[l + 1])): what one backprop step produces. A chunk can hold
// the end of one layer and the start of the next; it travels once every layer in it has pushed
// (or pulled) for the clock, so a request may complete only after the neighbouring layer's call.
// Each layer's clock counts its pushes; pull(layer) asks for the version its clock needs under
// the job's consistency model.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/consistency.h"
#include "ps/job.h"
#include "ps/push_schedule.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"
#include "transport/request.h"

namespace poseidon::ps {

struct ClientOptions {
  Consistency consistency;  // must match the servers'
  PushSchedule push;
  // The clocks this worker can resume from, when it keeps state of its own beside the servers' (a
  // Session's worker: its trainer's data position); nullopt: any clock the servers have
  // (ps/checkpoint/resume.h).
  std::optional<std::vector<uint64_t>> resumable_clocks;
};

class Client {
 public:
  // Registers the buffers, publishes them and learns the servers'. `layout` must have been built
  // from model.tensors(); tensor and layer indices below are the model's. Fails, naming the
  // model, on a model that does not validate. `context` must be connected and outlive the client.
  static Result<std::unique_ptr<Client>> start(transport::Context& context, transport::bootstrap::Store& store,
                                               const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                               const Consistency& consistency, Deadline deadline);
  static Result<std::unique_ptr<Client>> start(transport::Context& context, transport::bootstrap::Store& store,
                                               const model::Model& model, const ChunkLayout& layout, const PsJob& job,
                                               const ClientOptions& options, Deadline deadline);
  virtual ~Client() = default;

  virtual std::span<float> parameters(size_t tensor) = 0;
  virtual std::span<float> gradients(size_t tensor) = 0;
  virtual std::span<float> allParameters() = 0;

  // The clock the job resumed from (0 on a fresh start); every layer's clock starts there.
  virtual uint64_t startClock() const = 0;
  // Worker 0 on a fresh start sends parameters() as the initial model; elsewhere a no-op.
  virtual Status initialize(Deadline deadline) = 0;

  // Sends the layer's gradients for its current clock and advances the clock. Completes when
  // the servers applied them (BSP: aggregated with every worker's); gradients() of the layer
  // must not change before. Async with n_push > 1 accumulates and sends every n_push clocks.
  virtual transport::RequestPtr push(size_t layer) = 0;
  // Fetches the layer's parameters at the version its clock needs (BSP: all pushes of earlier
  // clocks applied; SSP(s): clock - s; async: whatever is there, every n_fetch clocks).
  // Under BSP a chunk's next version is asked for as soon as its gradient is pushed, so once
  // every layer in a chunk has pushed, its parameters may be replaced by the next version at any
  // time; pull() says when that has happened.
  virtual transport::RequestPtr pull(size_t layer) = 0;
  // The same with an explicit version: at least `min_version` (at most the layer's clock, since
  // a version beyond our own pushes could never come). Async servers answer at once regardless.
  virtual transport::RequestPtr pull(size_t layer, uint64_t min_version) = 0;
  // request->wait(deadline), but a timeout names what the servers said they wait for, after
  // pinging them (up to 1 s past the deadline) to name one that does not answer.
  virtual Status wait(const transport::RequestPtr& request, Deadline deadline) = 0;

  virtual uint64_t clock(size_t layer) const = 0;
  // Lowest version among the layer's chunks as last received.
  virtual uint64_t version(size_t layer) const = 0;
  virtual size_t layerCount() const = 0;

  // Asks every server to checkpoint at `clock` (or the first clock none of its chunks passed).
  // A server that could not (no directory, a failed write) tells this worker, which logs it and
  // returns it from the next call (whose own request is still sent).
  virtual Status requestCheckpoint(uint64_t clock) = 0;
  // The newest checkpoint clock every server has written a file of, as this worker has heard (the
  // job can resume from it; the start clock until one is). Servers told it before this worker's
  // later pushes reach them.
  virtual uint64_t committedCheckpoint() const = 0;
  // Tells every server this worker is done; waits for outstanding requests first.
  virtual Status finish(Deadline deadline) = 0;
};

}  // namespace poseidon::ps
