#include "trainer/sync/server_optimized_sync.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "ps/client.h"
#include "scheme/serial_driver.h"
#include "trainer/sync/hybrid_ps.h"
#include "trainer/sync/replica.h"

namespace poseidon::trainer {

namespace {

class ServerOptimizedSyncImpl final : public ServerOptimizedSync {
 public:
  ServerOptimizedSyncImpl(model::Model model, const ServerOptimizedOptions& options)
      // The replica is used for its buffers and Replica::loadGradient only: the optimizer runs on
      // the servers, so it gets plain SGD (no state to allocate) and never steps.
      : options_(options),
        replica_(std::move(model), kernels::OptimizerConfig{}),
        started_(replica_.layerCount()),
        driver_("server-optimized sync driver") {}

  Status setUp(transport::Context& context, transport::bootstrap::Store& store, Deadline deadline);
  Status initialize(Deadline deadline) override;
  uint64_t committedCheckpoint() const override { return client_->committedCheckpoint(); }

  size_t layerCount() const override { return replica_.layerCount(); }
  const model::Layer& layer(size_t layer) const override { return replica_.layer(layer); }
  std::span<float> params(size_t layer) override { return replica_.params(layer); }
  Status bindParams(size_t layer, std::span<float> params) override {
    if (layer < started_.size() && started_[layer].request) {
      return makeStatus(StatusCode::kInvalidArgument, "binding the parameters of layer '{}' while its sync runs",
                        replica_.layer(layer).name());
    }
    return replica_.bindParams(layer, params);
  }
  uint64_t iteration() const override { return iteration_; }
  std::span<float> u(size_t layer) override { return replica_.u(layer); }
  std::span<float> v(size_t layer) override { return replica_.v(layer); }
  std::span<float> gradient(size_t layer) override { return replica_.gradient(layer); }
  transport::RequestPtr startLayer(size_t layer, Deadline deadline) override;
  Result<LayerSyncResult> waitLayer(size_t layer, Deadline deadline) override;
  Status endIteration(Deadline deadline) override;
  Status finish(Deadline deadline) override { return client_->finish(deadline); }

 private:
  // A layer's sync of the current iteration, from startLayer() to waitLayer().
  struct Started {
    transport::RequestPtr request;  // null: not started this iteration
    Clock::time_point at{};
    bool waited = false;
    // Set by the driver before the request completes.
    uint64_t version = 0;
    uint64_t bytes_sent = 0, bytes_received = 0;
  };

  // Copies the layer's parameters as last pulled into the trainer's buffer.
  void copyOut(size_t layer) {
    const std::span<float> pulled = client_->parameters(layer);
    std::copy(pulled.begin(), pulled.end(), replica_.params(layer).begin());
  }

  const ServerOptimizedOptions options_;
  Replica replica_;
  std::unique_ptr<ps::Client> client_;
  uint64_t iteration_ = 0;
  std::mutex mutex_;              // the driver's results in started_
  std::vector<Started> started_;  // per layer
  scheme::SerialDriver driver_;   // last: stopped before the rest goes
};

Status ServerOptimizedSyncImpl::setUp(transport::Context& context, transport::bootstrap::Store& store,
                                      Deadline deadline) {
  const model::Model ps_model = hybridPsModel(replica_.model().layers());
  auto layout = hybridLayout(ps_model, options_.ps_servers, options_.chunk_bytes);
  if (!layout) return layout.status();
  ps::ClientOptions client_options;
  client_options.consistency = options_.consistency;
  client_options.push = options_.push;
  client_options.resumable_clocks = options_.resumable_clocks;
  auto client =
      ps::Client::start(context, store, ps_model, *layout,
                        hybridPsJob(options_.workers, options_.ps_servers, options_.name), client_options, deadline);
  if (!client) return client.status();
  client_ = std::move(*client);
  iteration_ = client_->startClock();  // every layer's clock starts there
  return Status::ok();
}

Status ServerOptimizedSyncImpl::initialize(Deadline deadline) {
  for (size_t l = 0; l < replica_.layerCount(); ++l) {
    const std::span<float> mine = replica_.params(l);
    std::copy(mine.begin(), mine.end(), client_->parameters(l).begin());
  }
  // Worker 0 sends its parameters as the initial model (a no-op elsewhere); a pull of version 0
  // is answered once the servers hold them, so no worker pushes into an uninitialised chunk.
  POSEIDON_RETURN_IF_ERROR(client_->initialize(deadline));
  std::vector<transport::RequestPtr> pulls;
  for (size_t l = 0; l < replica_.layerCount(); ++l) pulls.push_back(client_->pull(l));
  for (const auto& pull : pulls) POSEIDON_RETURN_IF_ERROR(client_->wait(pull, deadline));
  for (size_t l = 0; l < replica_.layerCount(); ++l) copyOut(l);
  return Status::ok();
}

transport::RequestPtr ServerOptimizedSyncImpl::startLayer(size_t layer, Deadline deadline) {
  const std::string what = fmt::format("PS ({}) sync of layer {} in iteration {}", options_.consistency.canonical(),
                                       layer < replica_.layerCount() ? replica_.layer(layer).name() : "?", iteration_);
  const auto refuse = [&](Status why) { return transport::failedRequest(what, std::move(why)); };
  if (layer >= started_.size()) {
    return refuse(makeStatus(StatusCode::kInvalidArgument, "layer {} is not in [0, {})", layer, started_.size()));
  }
  Started& started = started_[layer];
  if (started.request) {
    return refuse(makeStatus(StatusCode::kInvalidArgument, "layer '{}' was already started in iteration {}",
                             replica_.layer(layer).name(), iteration_));
  }
  // The previous sync of the layer completed (the pipeline waits for it), so its push was
  // acknowledged and the gradient buffer is free again.
  if (Status loaded = replica_.loadGradient(layer, client_->gradients(layer)); !loaded.isOk()) {
    return refuse(std::move(loaded));
  }
  started.at = Clock::now();
  started.waited = false;
  // Both go out now: the gradient, then the ask for the version the layer's new clock needs.
  // The driver finishes the layers in the order they come back (the gate), not start order.
  transport::RequestPtr push = client_->push(layer);
  transport::RequestPtr pull = client_->pull(layer);
  started.request = driver_.submit(
      what,
      [this, layer, deadline, push, pull] {
        POSEIDON_RETURN_IF_ERROR(client_->wait(push, deadline));
        POSEIDON_RETURN_IF_ERROR(client_->wait(pull, deadline));
        copyOut(layer);
        std::lock_guard lock(mutex_);
        Started& done = started_[layer];
        done.version = client_->version(layer);
        done.bytes_sent = push->bytes();
        done.bytes_received = pull->bytes();
        return Status::ok();
      },
      scheme::Gate{{push, pull}, deadline});
  return started.request;
}

Result<LayerSyncResult> ServerOptimizedSyncImpl::waitLayer(size_t layer, Deadline deadline) {
  if (layer >= started_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "waiting for layer {}: not in [0, {})", layer, started_.size());
  }
  Started& started = started_[layer];
  if (!started.request) {
    return makeStatus(StatusCode::kInvalidArgument, "waiting for layer '{}' in iteration {}: its sync was not started",
                      replica_.layer(layer).name(), iteration_);
  }
  (void)started.request->wait(deadline);
  if (!started.request->test()) {
    return makeStatus(StatusCode::kTimeout, "waiting for the PS sync of layer '{}' in iteration {}: still running",
                      replica_.layer(layer).name(), iteration_);
  }
  started.waited = true;  // collected, whatever its outcome: the iteration may end
  POSEIDON_RETURN_IF_ERROR(started.request->status());
  std::lock_guard lock(mutex_);
  LayerSyncResult result;
  result.scheme = scheme::Scheme::kPs;
  result.seconds = std::chrono::duration<double>(started.request->completedAt() - started.at).count();
  result.bytes_sent = started.bytes_sent;
  result.bytes_received = started.bytes_received;
  result.version = started.version;
  return result;
}

Status ServerOptimizedSyncImpl::endIteration(Deadline) {
  for (size_t l = 0; l < started_.size(); ++l) {
    if (started_[l].request && !started_[l].waited) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "ending iteration {} while the sync of layer '{}' was started but not waited for", iteration_,
                        replica_.layer(l).name());
    }
  }
  for (Started& started : started_) started.request.reset();
  ++iteration_;
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<ServerOptimizedSync>> ServerOptimizedSync::start(transport::Context& ps_context,
                                                                        transport::bootstrap::Store& store,
                                                                        model::Model model,
                                                                        const ServerOptimizedOptions& options,
                                                                        Deadline deadline) {
  auto sync = std::make_unique<ServerOptimizedSyncImpl>(std::move(model), options);
  POSEIDON_RETURN_IF_ERROR(sync->setUp(ps_context, store, deadline));
  return std::unique_ptr<ServerOptimizedSync>(std::move(sync));
}

}  // namespace poseidon::trainer
