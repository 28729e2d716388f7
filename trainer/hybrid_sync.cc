#include "trainer/hybrid_sync.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/dispatch.h"
#include "ps/client.h"
#include "sfb/adam_worker.h"
#include "sfb/replica_check.h"
#include "sfb/ring_allreduce.h"
#include "sfb/sf_broadcast.h"
#include "trainer/hybrid_ps.h"
#include "trainer/store_agreement.h"

namespace poseidon::trainer {

using sfb::Scheme;

namespace {

constexpr size_t kNoIndex = SIZE_MAX;
constexpr std::chrono::seconds kAgreementTimeout{120};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The schemes HybComm may pick for some layer under `options`.
std::vector<Scheme> schemesOf(const HybComm& hybcomm, const HybCommOptions& options) {
  std::vector<Scheme> used;
  const auto add = [&](Scheme s) {
    if (std::find(used.begin(), used.end(), s) == used.end()) used.push_back(s);
  };
  add(Scheme::kPs);
  for (size_t l = 0; l < hybcomm.layerCount(); ++l) {
    add(hybcomm.scheme(l));
    if (options.mode != HybCommMode::kAdaptive) continue;
    for (Scheme candidate : options.candidates) {
      if (HybComm::applies(candidate, hybcomm.layer(l))) add(candidate);
    }
  }
  return used;
}

transport::PairTraffic serverTraffic(transport::Context& context, int workers) {
  transport::PairTraffic total;
  for (int rank = workers; rank < context.size(); ++rank) total += context.pair(rank).traffic();
  return total;
}

class HybridSyncImpl final : public HybridSync {
 public:
  HybridSyncImpl(const HybridContexts& contexts, std::vector<sfb::LayerShape> layers, const HybridOptions& options,
                 HybComm hybcomm, Agree agree)
      : contexts_(contexts), layers_(std::move(layers)), options_(options), hybcomm_(std::move(hybcomm)),
        agree_(std::move(agree)) {}

  Status setUp(transport::bootstrap::Store& store, Deadline deadline);

  size_t layerCount() const override { return layers_.size(); }
  std::span<float> params(size_t layer) override { return params_.at(layer); }
  std::span<float> u(size_t layer) override;
  std::span<float> v(size_t layer) override;
  std::span<float> gradient(size_t layer) override {
    if (layers_.at(layer).isFullyConnected()) return {};
    return gradients_[layer];
  }
  Result<LayerSyncResult> syncLayer(size_t layer, Deadline deadline) override;
  Status endIteration(Deadline deadline) override;
  Status finish(Deadline deadline) override;
  const HybComm& hybcomm() const override { return hybcomm_; }

 private:
  bool isFc(size_t layer) const { return layers_[layer].isFullyConnected(); }
  // U V^T of this worker into `out` (M x N), in the exact order of kernels/sf_update.h.
  Status formGradient(size_t layer, float* out);
  // This worker's full gradient of the layer into `target` (a scheme's send buffer).
  Status loadGradient(size_t layer, std::span<float> target);
  // The optimizer step on params(layer) from the summed gradient (scaled by 1/P1 in the step).
  Status applyStep(size_t layer, const float* summed);
  kernels::OptimizerStep step() const { return options_.optimizer.stepFor(iteration_); }

  Status syncPs(size_t layer, Deadline deadline, LayerSyncResult& result);
  Status syncRing(size_t layer, Deadline deadline, LayerSyncResult& result);
  Status syncSfb(size_t layer, Deadline deadline, LayerSyncResult& result);
  Status syncAdam(size_t layer, Deadline deadline, LayerSyncResult& result);

  HybridContexts contexts_;
  std::vector<sfb::LayerShape> layers_;
  HybridOptions options_;
  HybComm hybcomm_;
  Agree agree_;
  transport::bootstrap::Store* store_ = nullptr;  // outlives this object, as the schemes need anyway
  uint64_t iteration_ = 0;

  std::vector<std::vector<float>> params_, state0_, state1_, gradients_;
  // FC factors when no SFB object holds them (it holds them in its registered buffers).
  std::vector<std::vector<float>> u_, v_;
  std::vector<size_t> fc_index_;  // layer -> index among the FC layers (SFB, Adam), or kNoIndex

  std::unique_ptr<ps::Client> ps_;
  std::unique_ptr<sfb::SfBroadcast> sfb_;
  std::unique_ptr<sfb::RingAllreduce> ring_;
  std::unique_ptr<sfb::AdamWorker> adam_;
};

Status HybridSyncImpl::setUp(transport::bootstrap::Store& store, Deadline deadline) {
  const int workers = options_.workers;
  options_.optimizer.grad_scale = 1.0f / static_cast<float>(workers);
  POSEIDON_RETURN_IF_ERROR(options_.optimizer.validate());
  if (options_.optimizer.sum_only) {
    return makeStatus(StatusCode::kInvalidArgument, "the workers' optimizer cannot be 'sum' (that is the servers')");
  }
  const int words = options_.optimizer.stateWords();
  std::vector<sfb::SfLayer> sf_layers;
  std::vector<sfb::AdamLayer> adam_layers;
  std::vector<sfb::RingLayer> ring_layers;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const sfb::LayerShape& layer = layers_[l];
    const size_t floats = static_cast<size_t>(layer.denseFloats());
    params_.emplace_back(floats, 0.0f);
    state0_.emplace_back(words >= 1 ? floats : 0, options_.optimizer.stateInitialValue(0));
    state1_.emplace_back(words >= 2 ? floats : 0, options_.optimizer.stateInitialValue(1));
    gradients_.emplace_back(layer.isFullyConnected() ? 0 : floats, 0.0f);
    ring_layers.push_back({layer.name, floats});
    if (layer.isFullyConnected()) {
      fc_index_.push_back(sf_layers.size());
      const auto m = static_cast<size_t>(layer.m), n = static_cast<size_t>(layer.n);
      const auto k = static_cast<size_t>(options_.batch);
      sf_layers.push_back({layer.name, m, n, k});
      adam_layers.push_back({layer.name, m, n, k});
    } else {
      fc_index_.push_back(kNoIndex);
    }
  }

  const std::vector<Scheme> used = schemesOf(hybcomm_, options_.hybcomm);
  const auto uses = [&](Scheme s) { return std::find(used.begin(), used.end(), s) != used.end(); };
  const auto missing = [&](Scheme s) {
    return makeStatus(StatusCode::kInvalidArgument, "HybComm may pick {} for some layer, but no {} context was given",
                      sfb::schemeName(s), sfb::schemeName(s));
  };

  if (contexts_.ps == nullptr) return missing(Scheme::kPs);
  const auto tensors = hybridTensors(layers_);
  auto layout = hybridLayout(layers_, options_.ps_servers, options_.chunk_bytes);
  if (!layout) return layout.status();
  std::vector<ps::Layer> ps_layers;
  for (size_t l = 0; l < layers_.size(); ++l) ps_layers.push_back({layers_[l].name, {l}});
  auto client = ps::Client::start(*contexts_.ps, store, tensors, *layout, std::move(ps_layers),
                                  hybridPsJob(workers, options_.ps_servers, options_.name), ps::Consistency{},
                                  deadline);
  if (!client) return client.status();
  ps_ = std::move(*client);
  // The protocol's first steps: worker 0 initialises the (unused) server memory, all see it.
  POSEIDON_RETURN_IF_ERROR(ps_->initialize(deadline));
  std::vector<transport::RequestPtr> pulls;
  for (size_t l = 0; l < layers_.size(); ++l) pulls.push_back(ps_->pull(l));
  for (const auto& pull : pulls) POSEIDON_RETURN_IF_ERROR(ps_->wait(pull, deadline));

  if (uses(Scheme::kSfb)) {
    if (contexts_.sfb == nullptr) return missing(Scheme::kSfb);
    auto sfb = sfb::SfBroadcast::start(*contexts_.sfb, store, sf_layers, deadline);
    if (!sfb) return sfb.status();
    sfb_ = std::move(*sfb);
  }
  if (uses(Scheme::kRing)) {
    if (contexts_.ring == nullptr) return missing(Scheme::kRing);
    sfb::RingOptions ring_options;
    ring_options.name = options_.name + "/ring";
    auto ring = sfb::RingAllreduce::start(*contexts_.ring, store, ring_layers, ring_options, deadline);
    if (!ring) return ring.status();
    ring_ = std::move(*ring);
  }
  if (uses(Scheme::kAdam)) {
    if (contexts_.adam == nullptr) return missing(Scheme::kAdam);
    auto adam = sfb::AdamWorker::start(*contexts_.adam, store, adam_layers, workers, deadline);
    if (!adam) return adam.status();
    adam_ = std::move(*adam);
  }
  if (!sfb_) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      const bool fc = isFc(l);
      u_.emplace_back(fc ? static_cast<size_t>(layers_[l].m * options_.batch) : 0, 0.0f);
      v_.emplace_back(fc ? static_cast<size_t>(layers_[l].n * options_.batch) : 0, 0.0f);
    }
  }
  store_ = &store;
  agree_ = storeAgreement(store, options_.name + "/hybcomm", contexts_.ps->rank(), workers, kAgreementTimeout);
  return Status::ok();
}

std::span<float> HybridSyncImpl::u(size_t layer) {
  if (!isFc(layer)) return {};
  return sfb_ ? sfb_->u(fc_index_[layer]) : std::span<float>(u_[layer]);
}

std::span<float> HybridSyncImpl::v(size_t layer) {
  if (!isFc(layer)) return {};
  return sfb_ ? sfb_->v(fc_index_[layer]) : std::span<float>(v_[layer]);
}

Status HybridSyncImpl::formGradient(size_t layer, float* out) {
  const auto floats = static_cast<size_t>(layers_[layer].denseFloats());
  std::fill_n(out, floats, 0.0f);
  // Plain SGD with lr = -1 onto zeros: 0 - (-1 * g) = g exactly, g formed in the SF kernel's order.
  kernels::SfUpdate update;
  update.params = out;
  update.rows = static_cast<size_t>(layers_[layer].m);
  update.cols = static_cast<size_t>(layers_[layer].n);
  update.rank = static_cast<size_t>(options_.batch);
  const float* uu = u(layer).data();
  const float* vv = v(layer).data();
  update.u = std::span<const float* const>(&uu, 1);
  update.v = std::span<const float* const>(&vv, 1);
  update.step.lr = -1.0f;
  const Status status = kernels::sfUpdate(update, kernels::Place::cpu());
  if (!status.isOk()) return makeStatus(StatusCode::kInternal, "forming {}'s gradient: {}", layers_[layer].name, status.message());
  return Status::ok();
}

Status HybridSyncImpl::applyStep(size_t layer, const float* summed) {
  kernels::ChunkUpdate update;
  update.params = params_[layer].data();
  update.state0 = state0_[layer].empty() ? nullptr : state0_[layer].data();
  update.state1 = state1_[layer].empty() ? nullptr : state1_[layer].data();
  update.count = params_[layer].size();
  update.gradients = std::span<const float* const>(&summed, 1);
  update.step = step();
  const Status status = kernels::chunkUpdate(update, kernels::Place::cpu());
  if (!status.isOk()) return makeStatus(StatusCode::kInternal, "updating {}: {}", layers_[layer].name, status.message());
  return Status::ok();
}

Status HybridSyncImpl::loadGradient(size_t layer, std::span<float> target) {
  if (isFc(layer)) return formGradient(layer, target.data());
  std::copy(gradients_[layer].begin(), gradients_[layer].end(), target.begin());
  return Status::ok();
}

Status HybridSyncImpl::syncPs(size_t layer, Deadline deadline, LayerSyncResult& result) {
  POSEIDON_RETURN_IF_ERROR(loadGradient(layer, ps_->gradients(layer)));
  const auto before = serverTraffic(*contexts_.ps, options_.workers);
  const auto start = std::chrono::steady_clock::now();
  const transport::RequestPtr push = ps_->push(layer);
  const transport::RequestPtr pull = ps_->pull(layer);
  POSEIDON_RETURN_IF_ERROR(ps_->wait(push, deadline));
  POSEIDON_RETURN_IF_ERROR(ps_->wait(pull, deadline));
  POSEIDON_RETURN_IF_ERROR(applyStep(layer, ps_->parameters(layer).data()));
  result.seconds = secondsSince(start);
  const auto moved = transport::trafficSince(before, serverTraffic(*contexts_.ps, options_.workers));
  result.bytes_sent = moved.bytes_sent;
  result.bytes_received = moved.bytes_received;
  return Status::ok();
}

Status HybridSyncImpl::syncRing(size_t layer, Deadline deadline, LayerSyncResult& result) {
  std::span<float> buffer = ring_->buffer(layer);
  POSEIDON_RETURN_IF_ERROR(loadGradient(layer, buffer));
  const sfb::RingTraffic before = ring_->traffic(layer);
  const auto start = std::chrono::steady_clock::now();
  POSEIDON_RETURN_IF_ERROR(ring_->allreduce(layer, deadline));
  POSEIDON_RETURN_IF_ERROR(applyStep(layer, buffer.data()));
  result.seconds = secondsSince(start);
  const sfb::RingTraffic after = ring_->traffic(layer);
  result.bytes_sent = after.sent_bytes - before.sent_bytes;
  result.bytes_received = after.received_bytes - before.received_bytes;
  return Status::ok();
}

Status HybridSyncImpl::syncSfb(size_t layer, Deadline deadline, LayerSyncResult& result) {
  const size_t index = fc_index_[layer];
  const sfb::LayerTraffic before = sfb_->traffic(index);
  const auto start = std::chrono::steady_clock::now();
  POSEIDON_RETURN_IF_ERROR(sfb_->broadcast(index));
  POSEIDON_RETURN_IF_ERROR(sfb_->update(index, params_[layer].data(),
                                        state0_[layer].empty() ? nullptr : state0_[layer].data(),
                                        state1_[layer].empty() ? nullptr : state1_[layer].data(), step(),
                                        kernels::Place::cpu(), deadline));
  result.seconds = secondsSince(start);
  const sfb::LayerTraffic after = sfb_->traffic(index);
  result.bytes_sent = after.sent_bytes - before.sent_bytes;
  result.bytes_received = after.received_bytes - before.received_bytes;
  return Status::ok();
}

Status HybridSyncImpl::syncAdam(size_t layer, Deadline deadline, LayerSyncResult& result) {
  const size_t index = fc_index_[layer];
  std::span<float> u_out = adam_->u(index);
  std::span<float> v_out = adam_->v(index);
  std::copy_n(u(layer).data(), u_out.size(), u_out.begin());
  std::copy_n(v(layer).data(), v_out.size(), v_out.begin());
  const sfb::LayerTraffic before = adam_->traffic(index);
  const auto start = std::chrono::steady_clock::now();
  POSEIDON_RETURN_IF_ERROR(adam_->push(index));
  POSEIDON_RETURN_IF_ERROR(adam_->wait(index, deadline));
  POSEIDON_RETURN_IF_ERROR(applyStep(layer, adam_->gradient(index).data()));
  result.seconds = secondsSince(start);
  const sfb::LayerTraffic after = adam_->traffic(index);
  result.bytes_sent = after.sent_bytes - before.sent_bytes;
  result.bytes_received = after.received_bytes - before.received_bytes;
  return Status::ok();
}

Result<LayerSyncResult> HybridSyncImpl::syncLayer(size_t layer, Deadline deadline) {
  if (layer >= layers_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "layer {} is not in [0, {})", layer, layers_.size());
  }
  LayerSyncResult result;
  result.scheme = hybcomm_.scheme(layer);
  Status status;
  switch (result.scheme) {
    case Scheme::kPs: status = syncPs(layer, deadline, result); break;
    case Scheme::kRing: status = syncRing(layer, deadline, result); break;
    case Scheme::kSfb: status = syncSfb(layer, deadline, result); break;
    case Scheme::kAdam: status = syncAdam(layer, deadline, result); break;
  }
  if (!status.isOk()) {
    return makeStatus(status.code(), "{} of layer '{}' in iteration {}: {}", sfb::schemeName(result.scheme),
                      layers_[layer].name, iteration_, status.message());
  }
  hybcomm_.record(layer, result.seconds, result.bytes_sent, result.bytes_received);
  return result;
}

Status HybridSyncImpl::endIteration(Deadline deadline) {
  ++iteration_;
  const uint64_t every = options_.replica_check_every;
  if (every > 0 && iteration_ % every == 0) {
    for (size_t l = 0; l < layers_.size(); ++l) {
      POSEIDON_RETURN_IF_ERROR(sfb::checkReplicas(*store_, fmt::format("{}/replicas/{}", options_.name, l),
                                                  contexts_.ps->rank(), options_.workers, iteration_, params_[l],
                                                  deadline));
    }
  }
  return hybcomm_.endIteration(agree_);
}

Status HybridSyncImpl::finish(Deadline deadline) {
  if (adam_) POSEIDON_RETURN_IF_ERROR(adam_->finish(deadline));
  return ps_->finish(deadline);
}

}  // namespace

Result<std::vector<Scheme>> schemesInUse(std::span<const sfb::LayerShape> layers,
                                                    const HybridOptions& options) {
  auto hybcomm = HybComm::create({layers.begin(), layers.end()}, {options.workers, options.ps_servers, options.batch},
                                 options.hybcomm);
  if (!hybcomm) return hybcomm.status();
  return schemesOf(*hybcomm, options.hybcomm);
}

Result<std::unique_ptr<HybridSync>> HybridSync::start(const HybridContexts& contexts,
                                                                 transport::bootstrap::Store& store,
                                                                 std::vector<sfb::LayerShape> layers,
                                                                 const HybridOptions& options, Deadline deadline) {
  auto hybcomm = HybComm::create(layers, {options.workers, options.ps_servers, options.batch}, options.hybcomm);
  if (!hybcomm) return hybcomm.status();
  auto sync = std::make_unique<HybridSyncImpl>(contexts, std::move(layers), options, std::move(*hybcomm), Agree{});
  POSEIDON_RETURN_IF_ERROR(sync->setUp(store, deadline));
  return std::unique_ptr<HybridSync>(std::move(sync));
}

}  // namespace poseidon::trainer
