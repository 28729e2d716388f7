// AdamServer: one server of the Adam scheme (the comparator of [Poseidon 2015] section 4.3.1, after
// [Project Adam]). It holds the fully-connected layers adamServerOf() gives it; every iteration each
// of the P1 workers writes its sufficient factors of a layer (U and V, one write) into its slot on
// this server, and once all P1 have landed the server rebuilds G = sum_p U_p V_p^T and writes the
// full rows x cols matrix into every worker's gradient buffer. It returns the aggregate gradient,
// not updated weights: as with every scheme here, each worker applies the optimizer itself.
//
// Ranks 0..P1-1 of the context are the workers, P1..size-1 the servers (server s is rank P1 + s).
// One thread per peer waits on that peer's ordered stream of immediates (adam_protocol.h); the
// thread whose push completes an iteration rebuilds G and sends it. Any failure is final for the
// server: a worker that disconnects or breaks the protocol, or an immediate from a rank that is not
// a worker, stops it, and every other worker is told why (they fail naming the culprit).
#pragma once

#include <chrono>
#include <memory>
#include <span>

#include "adam/adam_layer.h"
#include "model/layer.h"
#include "scheme/traffic.h"
#include "transport/bootstrap/store.h"
#include "transport/context.h"

namespace poseidon::adam {

struct AdamServerOptions {
  // How long an iteration of a layer may wait for missing factors before the workers that did push
  // are told whose factors it waits for (one kWaiting notice each, again if that changes), so
  // their timeouts can name the laggard. Early notices cost an empty write each, late ones leave a
  // timeout shorter than this unable to name anyone.
  std::chrono::milliseconds stall_notice{1000};
  // Bound on waiting for the writes of a layer's previous G to finish locally before G is rebuilt
  // in the buffer they read (they have landed by then; see adam_server.cc).
  std::chrono::milliseconds write_drain{30000};
};

class AdamServer {
 public:
  // Registers this server's slot, gradient and notice buffers, publishes the slots in the store,
  // fetches every worker's buffers and starts the peer threads. `context` must be connected, be
  // rank >= workers, and outlive the server; every rank must be given the same layers (the
  // model's FC layers) and batch K.
  static Result<std::unique_ptr<AdamServer>> start(transport::Context& context, transport::bootstrap::Store& store,
                                                   std::span<const model::Layer> layers, uint64_t batch, int workers,
                                                   Deadline deadline, const AdamServerOptions& options = {});
  virtual ~AdamServer() = default;

  // Blocks until every worker said goodbye (OK) or the server failed (that failure, naming the
  // worker or peer); kTimeout naming the workers still connected when the deadline passes first.
  virtual Status waitUntilDone(Deadline deadline) = 0;

  virtual int server() const = 0;
  virtual const AdamLayout& layout() const = 0;
  // Iterations of layer l this server completed (0 for a layer another server holds).
  virtual uint64_t iterations(size_t l) const = 0;
  // G of layer l's last completed iteration; empty for a layer another server holds. Read it only
  // while no worker pushes that layer.
  virtual std::span<const float> gradient(size_t l) const = 0;
  // This server's traffic for layer l, summed over iterations (zero for a layer another server
  // holds): the factors received and the G sent, payload bytes and messages, to compare with
  // adamServerTraffic() (cost_model.h) times the iterations. The stall and failure notices are not
  // counted: they are not the scheme's traffic and travel only when a worker is late or gone.
  virtual scheme::Traffic traffic(size_t l) const = 0;
};

// The server's reconstruction: G = sum_p U_p V_p^T, each element accumulated in one float in rank
// order (p ascending, then k ascending, from +0, one FMA per term), as kernels/sf_update.h
// documents. `u[p]` is rows x K and `v[p]` cols x K (K = `batch`), row-major, rows and cols from
// layer.fc(); `g` has rows * cols floats.
// Exposed so tests check it against that sum bit for bit. kInternal naming the problem when the
// kernel refuses the arguments.
Status reconstructAdamGradient(const model::Layer& layer, uint64_t batch, std::span<const float* const> u,
                               std::span<const float* const> v, std::span<float> g);

}  // namespace poseidon::adam
