#include "trainer/sync/hybrid_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "scheme/start_agreement.h"
#include "trainer/hybcomm/store_agreement.h"
#include "trainer/sync/hybrid_ps.h"
#include "trainer/sync/replica.h"
#include "trainer/sync/replica_check.h"
#include "trainer/sync/scheme_syncers.h"

namespace poseidon::trainer {

namespace {

constexpr size_t kNoIndex = SIZE_MAX;
constexpr std::chrono::seconds kAgreementTimeout{120};

// The schemes HybComm may pick for some layer under `options`.
std::vector<scheme::Scheme> schemesOf(const HybComm& hybcomm, const HybCommOptions& options) {
  std::vector<scheme::Scheme> used;
  const auto add = [&](scheme::Scheme s) {
    if (std::find(used.begin(), used.end(), s) == used.end()) used.push_back(s);
  };
  add(scheme::Scheme::kPs);
  for (size_t l = 0; l < hybcomm.layerCount(); ++l) {
    add(hybcomm.scheme(l));
    if (options.mode != HybCommMode::kAdaptive) continue;
    for (scheme::Scheme candidate : options.candidates) {
      if (HybComm::applies(candidate, hybcomm.layer(l))) add(candidate);
    }
  }
  return used;
}

class HybridSyncImpl final : public HybridSync {
 public:
  HybridSyncImpl(const HybridContexts& contexts, model::Model model, const HybridOptions& options, HybComm hybcomm)
      : contexts_(contexts),
        options_(options),
        hybcomm_(std::move(hybcomm)),
        replica_(std::move(model), withMeanScale(options.optimizer, options.workers)),
        started_(replica_.layerCount()) {}

  Status setUp(transport::bootstrap::Store& store, Deadline deadline);
  Status agreeOnStart(transport::bootstrap::Store& store, Deadline deadline);

  size_t layerCount() const override { return replica_.layerCount(); }
  std::span<float> params(size_t layer) override { return replica_.params(layer); }
  Status bindParams(size_t layer, std::span<float> params) override {
    if (layer < started_.size() && started_[layer].request) {
      return makeStatus(StatusCode::kInvalidArgument, "binding the parameters of layer '{}' while its sync runs",
                        replica_.layer(layer).name());
    }
    return replica_.bindParams(layer, params);
  }
  std::span<float> optimizerState(size_t layer, int word) override {
    if (layer >= replica_.layerCount() || word < 0 || word >= replica_.optimizer().stateWords()) return {};
    float* state = word == 0 ? replica_.state0(layer) : replica_.state1(layer);
    return {state, replica_.params(layer).size()};
  }
  uint64_t iteration() const override { return iteration_; }
  Status setIteration(uint64_t iteration) override {
    for (const Started& started : started_) {
      if (started.request) {
        return makeStatus(StatusCode::kInvalidArgument, "setting the iteration to {} while a sync is started",
                          iteration);
      }
    }
    iteration_ = iteration;
    return Status::ok();
  }
  std::span<float> u(size_t layer) override { return replica_.u(layer); }
  std::span<float> v(size_t layer) override { return replica_.v(layer); }
  std::span<float> gradient(size_t layer) override { return replica_.gradient(layer); }
  transport::RequestPtr startLayer(size_t layer, Deadline deadline) override;
  Result<LayerSyncResult> waitLayer(size_t layer, Deadline deadline) override;
  Result<LayerSyncResult> syncLayer(size_t layer, Deadline deadline) override {
    const transport::RequestPtr request = startLayer(layer, deadline);
    if (layer >= started_.size() || started_[layer].request != request) return request->status();  // refused
    return waitLayer(layer, deadline);
  }
  Status endIteration(Deadline deadline) override;
  Status finish(Deadline deadline) override;
  const HybComm& hybcomm() const override { return hybcomm_; }

 private:
  // A layer's sync of the current iteration, from startLayer() to waitLayer().
  struct Started {
    transport::RequestPtr request;  // null: not started this iteration
    Syncer* syncer = nullptr;
    Clock::time_point at{};
    scheme::Traffic before;
    bool waited = false;  // its request was seen complete in waitLayer()
  };

  static kernels::OptimizerConfig withMeanScale(kernels::OptimizerConfig optimizer, int workers) {
    optimizer.grad_scale = 1.0f / static_cast<float>(workers);
    return optimizer;
  }
  Syncer* syncerFor(scheme::Scheme s) { return syncers_[static_cast<size_t>(s)].get(); }

  HybridContexts contexts_;
  HybridOptions options_;
  HybComm hybcomm_;
  Replica replica_;
  Agree agree_;
  transport::bootstrap::Store* store_ = nullptr;  // outlives this object, as the schemes need anyway
  uint64_t iteration_ = 0;
  std::vector<Started> started_;  // per layer
  // By scheme::Scheme; null for a scheme no layer may use. Declared after the replica, so their
  // drivers stop (the running sync ends, queued ones fail) before it goes.
  std::array<std::unique_ptr<Syncer>, 4> syncers_;
};

Status HybridSyncImpl::setUp(transport::bootstrap::Store& store, Deadline deadline) {
  const int workers = options_.workers;
  POSEIDON_RETURN_IF_ERROR(replica_.optimizer().validate());
  if (replica_.optimizer().sum_only) {
    return makeStatus(StatusCode::kInvalidArgument, "the workers' optimizer cannot be 'sum' (that is the servers')");
  }
  // SFB and Adam take the FC layers (and K once), the PS and the ring every layer's parameters.
  const std::vector<model::Layer>& layers = replica_.model().layers();
  std::vector<model::Layer> fc_layers;
  std::vector<size_t> fc_index;  // layer -> index among the FC layers (SFB, Adam), or kNoIndex
  for (const model::Layer& layer : layers) {
    fc_index.push_back(layer.isFullyConnected() ? fc_layers.size() : kNoIndex);
    if (layer.isFullyConnected()) fc_layers.push_back(layer);
  }
  const uint64_t batch = replica_.batch();

  const std::vector<scheme::Scheme> used = schemesOf(hybcomm_, options_.hybcomm);
  const auto uses = [&](scheme::Scheme s) { return std::find(used.begin(), used.end(), s) != used.end(); };
  const auto missing = [&](scheme::Scheme s) {
    return makeStatus(StatusCode::kInvalidArgument, "HybComm may pick {} for some layer, but no {} context was given",
                      scheme::schemeName(s), scheme::schemeName(s));
  };

  if (contexts_.ps == nullptr) return missing(scheme::Scheme::kPs);
  POSEIDON_RETURN_IF_ERROR(agreeOnStart(store, deadline));
  const model::Model ps_model = hybridPsModel(layers);
  auto layout = hybridLayout(ps_model, options_.ps_servers, options_.chunk_bytes);
  if (!layout) return layout.status();
  ps::ClientOptions client_options;  // BSP
  client_options.push = options_.push;
  auto client = ps::Client::start(*contexts_.ps, store, ps_model, *layout,
                                  hybridPsJob(workers, options_.ps_servers, options_.name), client_options, deadline);
  if (!client) return client.status();
  // The protocol's first steps: worker 0 initialises the (unused) server memory, all see it.
  POSEIDON_RETURN_IF_ERROR((*client)->initialize(deadline));
  std::vector<transport::RequestPtr> pulls;
  for (size_t l = 0; l < layers.size(); ++l) pulls.push_back((*client)->pull(l));
  for (const auto& pull : pulls) POSEIDON_RETURN_IF_ERROR((*client)->wait(pull, deadline));
  syncers_[static_cast<size_t>(scheme::Scheme::kPs)] = makePsSyncer(std::move(*client), *layout, replica_);

  if (uses(scheme::Scheme::kSfb)) {
    if (contexts_.sfb == nullptr) return missing(scheme::Scheme::kSfb);
    auto sfb = sfb::SfBroadcast::start(*contexts_.sfb, store, fc_layers, batch, deadline);
    if (!sfb) return sfb.status();
    auto syncer = makeSfbSyncer(std::move(*sfb), fc_index, replica_);
    if (!syncer) return syncer.status();
    syncers_[static_cast<size_t>(scheme::Scheme::kSfb)] = std::move(*syncer);
  }
  if (uses(scheme::Scheme::kRing)) {
    if (contexts_.ring == nullptr) return missing(scheme::Scheme::kRing);
    ring::RingOptions ring_options;
    ring_options.name = options_.name + "/ring";
    // The ring sums what the PS sums: every parameter of a layer, an FC layer's bias included.
    auto ring = ring::RingAllreduce::start(*contexts_.ring, store, ps_model.layers(), ring_options, deadline);
    if (!ring) return ring.status();
    syncers_[static_cast<size_t>(scheme::Scheme::kRing)] = makeRingSyncer(std::move(*ring), replica_);
  }
  if (uses(scheme::Scheme::kAdam)) {
    if (contexts_.adam == nullptr) return missing(scheme::Scheme::kAdam);
    auto adam = adam::AdamWorker::start(*contexts_.adam, store, fc_layers, batch, workers, deadline);
    if (!adam) return adam.status();
    syncers_[static_cast<size_t>(scheme::Scheme::kAdam)] = makeAdamSyncer(std::move(*adam), fc_index, replica_);
  }
  store_ = &store;
  agree_ = storeAgreement(store, options_.name + "/hybcomm", contexts_.ps->rank(), workers, kAgreementTimeout);
  return Status::ok();
}

Status HybridSyncImpl::agreeOnStart(transport::bootstrap::Store& store, Deadline deadline) {
  // The workers compare what only they hold (the layers' kinds and shapes, K, the optimizer, how
  // HybComm picks) before any scheme sets up; each scheme's servers check their own part.
  model::Fingerprint items = model::modelFingerprint(replica_.model());
  items.add("hybrid.workers", std::to_string(options_.workers));
  items.add("hybrid.ps_servers", std::to_string(options_.ps_servers));
  items.add("hybrid.adam_servers", std::to_string(options_.adam_servers));
  items.add("hybrid.chunk_bytes", std::to_string(options_.chunk_bytes));
  items.add("hybrid.optimizer", replica_.optimizer().canonical());
  const HybCommOptions& h = options_.hybcomm;
  std::string candidates;
  for (scheme::Scheme c : h.candidates)
    candidates += fmt::format("{}{}", candidates.empty() ? "" : ",", scheme::schemeName(c));
  items.add("hybrid.hybcomm",
            fmt::format("mode {} fixed {} rule {} ring {} adam {} candidates {} trials {} margin {} window {}",
                        static_cast<int>(h.mode), scheme::schemeName(h.fixed), static_cast<int>(h.closed_form.rule),
                        h.closed_form.consider_ring, h.closed_form.consider_adam, candidates, h.trial_iterations,
                        h.drift_margin, h.window));
  scheme::AgreementGroup workers{
      options_.name + "/start", {}, [](int r) { return fmt::format("worker {} (rank {})", r, r); }};
  for (int w = 0; w < options_.workers; ++w) workers.ranks.push_back(w);
  return scheme::agreeOnStart(store, workers, contexts_.ps->rank(), items, deadline);
}

transport::RequestPtr HybridSyncImpl::startLayer(size_t layer, Deadline deadline) {
  const auto refuse = [&](Status why) {
    return transport::failedRequest(fmt::format("sync of layer {} in iteration {}", layer, iteration_), std::move(why));
  };
  if (layer >= started_.size()) {
    return refuse(makeStatus(StatusCode::kInvalidArgument, "layer {} is not in [0, {})", layer, started_.size()));
  }
  Started& started = started_[layer];
  if (started.request) {
    return refuse(makeStatus(StatusCode::kInvalidArgument, "layer '{}' was already started in iteration {}",
                             replica_.layer(layer).name(), iteration_));
  }
  const scheme::Scheme s = hybcomm_.scheme(layer);
  Syncer* syncer = syncerFor(s);
  if (syncer == nullptr) {
    return refuse(makeStatus(StatusCode::kInternal, "HybComm picked {} for layer '{}', which was not set up",
                             scheme::schemeName(s), replica_.layer(layer).name()));
  }
  started.syncer = syncer;
  started.before = syncer->traffic(layer);
  started.at = Clock::now();
  started.waited = false;
  started.request = syncer->start(layer, iteration_, deadline);
  return started.request;
}

Result<LayerSyncResult> HybridSyncImpl::waitLayer(size_t layer, Deadline deadline) {
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
    return makeStatus(StatusCode::kTimeout, "waiting for {} of layer '{}' in iteration {}: still running",
                      scheme::schemeName(started.syncer->scheme()), replica_.layer(layer).name(), iteration_);
  }
  const bool first = !started.waited;
  started.waited = true;  // collected, whatever its outcome: the iteration may end
  POSEIDON_RETURN_IF_ERROR(started.request->status());
  LayerSyncResult result;
  result.scheme = started.syncer->scheme();
  result.seconds = std::chrono::duration<double>(started.request->completedAt() - started.at).count();
  const scheme::Traffic after = started.syncer->traffic(layer);
  result.bytes_sent = after.sent_bytes - started.before.sent_bytes;
  result.bytes_received = after.received_bytes - started.before.received_bytes;
  result.version = iteration_ + 1;  // BSP: every worker's gradient of this iteration is in
  if (first) hybcomm_.record(layer, result.seconds, result.bytes_sent, result.bytes_received);
  return result;
}

Status HybridSyncImpl::endIteration(Deadline deadline) {
  // All checked before any is cleared, so a refusal leaves the iteration as it was.
  for (size_t l = 0; l < started_.size(); ++l) {
    if (started_[l].request && !started_[l].waited) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "ending iteration {} while the sync of layer '{}' was started but not waited for", iteration_,
                        replica_.layer(l).name());
    }
  }
  for (Started& started : started_) started.request.reset();
  ++iteration_;
  const uint64_t every = options_.replica_check_every;
  if (every > 0 && iteration_ % every == 0) {
    for (size_t l = 0; l < replica_.layerCount(); ++l) {
      POSEIDON_RETURN_IF_ERROR(checkReplicas(*store_, fmt::format("{}/replicas/{}", options_.name, l),
                                             contexts_.ps->rank(), options_.workers, iteration_, replica_.params(l),
                                             deadline));
    }
  }
  return hybcomm_.endIteration(agree_);
}

Status HybridSyncImpl::finish(Deadline deadline) {
  // The Adam servers first: the PS servers are told last, as before.
  for (scheme::Scheme s : {scheme::Scheme::kAdam, scheme::Scheme::kRing, scheme::Scheme::kSfb, scheme::Scheme::kPs}) {
    if (Syncer* syncer = syncerFor(s)) POSEIDON_RETURN_IF_ERROR(syncer->finish(deadline));
  }
  return Status::ok();
}

// P1, P2 from the options, K from the model.
ClusterShape clusterOf(const model::Model& model, const HybridOptions& options) {
  return {options.workers, options.ps_servers, static_cast<int64_t>(model.batch())};
}

}  // namespace

Result<std::vector<scheme::Scheme>> schemesInUse(const model::Model& model, const HybridOptions& options) {
  auto hybcomm = HybComm::create(model.layers(), clusterOf(model, options), options.hybcomm);
  if (!hybcomm) return hybcomm.status();
  return schemesOf(*hybcomm, options.hybcomm);
}

Result<std::unique_ptr<HybridSync>> HybridSync::start(const HybridContexts& contexts,
                                                      transport::bootstrap::Store& store, model::Model model,
                                                      const HybridOptions& options, Deadline deadline) {
  auto hybcomm = HybComm::create(model.layers(), clusterOf(model, options), options.hybcomm);
  if (!hybcomm) return hybcomm.status();
  for (const Choice& choice : hybcomm->choices()) spdlog::info("HybComm iteration 0: {}", choice.reason);
  auto sync = std::make_unique<HybridSyncImpl>(contexts, std::move(model), options, std::move(*hybcomm));
  POSEIDON_RETURN_IF_ERROR(sync->setUp(store, deadline));
  return std::unique_ptr<HybridSync>(std::move(sync));
}

}  // namespace poseidon::trainer
