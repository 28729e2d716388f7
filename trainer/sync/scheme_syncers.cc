#include "trainer/sync/scheme_syncers.h"

#include <fmt/format.h>

#include "scheme/serial_driver.h"

namespace poseidon::trainer {
namespace {

std::string describeSync(scheme::Scheme scheme, const Replica& replica, size_t layer, uint64_t iteration) {
  return fmt::format("{} sync of layer '{}' (#{}) iteration {}", scheme::schemeName(scheme),
                     replica.layer(layer).name(), layer, iteration);
}

transport::RequestPtr unknownLayer(scheme::Scheme scheme, const Replica& replica, size_t layer) {
  return transport::failedRequest(
      fmt::format("{} sync of layer {}", scheme::schemeName(scheme), layer),
      makeStatus(StatusCode::kInvalidArgument, "layer {} is not in [0, {})", layer, replica.layerCount()));
}

class PsSyncer final : public Syncer {
 public:
  PsSyncer(std::unique_ptr<ps::Client> client, const ps::ChunkLayout& layout, Replica& replica)
      : client_(std::move(client)), replica_(replica), traffic_(replica.layerCount()), driver_("PS syncer driver") {
    for (size_t l = 0; l < replica.layerCount(); ++l) chunks_.push_back(layout.piecesOf(l).size());
  }

  scheme::Scheme scheme() const override { return scheme::Scheme::kPs; }

  transport::RequestPtr start(size_t layer, uint64_t iteration, Deadline deadline) override {
    if (layer >= replica_.layerCount()) return unknownLayer(scheme(), replica_, layer);
    std::string what = describeSync(scheme(), replica_, layer, iteration);
    if (Status loaded = replica_.loadGradient(layer, client_->gradients(layer)); !loaded.isOk()) {
      return transport::failedRequest(std::move(what), std::move(loaded));
    }
    // Both go out now: the push's chunks first, then the ask for the next version behind them.
    // The layers are independent: the driver finishes whichever came back first (the gate).
    transport::RequestPtr push = client_->push(layer);
    transport::RequestPtr pull = client_->pull(layer);
    return driver_.submit(
        std::move(what),
        [this, layer, iteration, deadline, push, pull] {
          POSEIDON_RETURN_IF_ERROR(client_->wait(push, deadline));
          POSEIDON_RETURN_IF_ERROR(client_->wait(pull, deadline));
          POSEIDON_RETURN_IF_ERROR(replica_.applyStep(layer, client_->parameters(layer).data(), iteration));
          // Each layer has chunks of its own: its gradient went out and its sum came back whole.
          const uint64_t bytes = client_->gradients(layer).size() * sizeof(float);
          std::lock_guard lock(mutex_);
          scheme::Traffic& t = traffic_[layer];
          ++t.syncs;
          t.sent_bytes += bytes;
          t.received_bytes += bytes;
          t.sent_messages += chunks_[layer];
          t.received_messages += chunks_[layer];
          return Status::ok();
        },
        scheme::Gate{{push, pull}, deadline});
  }

  scheme::Traffic traffic(size_t layer) const override {
    std::lock_guard lock(mutex_);
    return layer < traffic_.size() ? traffic_[layer] : scheme::Traffic{};
  }

  Status finish(Deadline deadline) override { return client_->finish(deadline); }

 private:
  std::unique_ptr<ps::Client> client_;
  Replica& replica_;
  std::vector<uint64_t> chunks_;  // per layer
  mutable std::mutex mutex_;
  std::vector<scheme::Traffic> traffic_;
  scheme::SerialDriver driver_;  // last: stopped before the rest goes
};

class RingSyncer final : public Syncer {
 public:
  RingSyncer(std::unique_ptr<ring::RingAllreduce> ring, Replica& replica)
      : ring_(std::move(ring)), replica_(replica), driver_("ring syncer driver") {}

  scheme::Scheme scheme() const override { return scheme::Scheme::kRing; }

  transport::RequestPtr start(size_t layer, uint64_t iteration, Deadline deadline) override {
    if (layer >= replica_.layerCount()) return unknownLayer(scheme(), replica_, layer);
    std::string what = describeSync(scheme(), replica_, layer, iteration);
    if (Status loaded = replica_.loadGradient(layer, ring_->buffer(layer)); !loaded.isOk()) {
      return transport::failedRequest(std::move(what), std::move(loaded));
    }
    transport::RequestPtr sum = ring_->start(layer, deadline);
    return driver_.submit(std::move(what), [this, layer, iteration, sum] {
      (void)sum->wait(Deadline::never());  // the pass keeps its own deadline
      POSEIDON_RETURN_IF_ERROR(sum->status());
      return replica_.applyStep(layer, ring_->buffer(layer).data(), iteration);
    });
  }

  scheme::Traffic traffic(size_t layer) const override { return ring_->traffic(layer); }
  Status finish(Deadline) override { return Status::ok(); }

 private:
  std::unique_ptr<ring::RingAllreduce> ring_;
  Replica& replica_;
  scheme::SerialDriver driver_;
};

class AdamSyncer final : public Syncer {
 public:
  AdamSyncer(std::unique_ptr<adam::AdamWorker> adam, std::vector<size_t> fc_index, Replica& replica)
      : adam_(std::move(adam)),
        fc_index_(std::move(fc_index)),
        replica_(replica),
        last_(replica.layerCount()),
        driver_("Adam syncer driver") {}

  scheme::Scheme scheme() const override { return scheme::Scheme::kAdam; }

  transport::RequestPtr start(size_t layer, uint64_t iteration, Deadline deadline) override {
    if (layer >= replica_.layerCount() || !replica_.isFc(layer)) return unknownLayer(scheme(), replica_, layer);
    std::string what = describeSync(scheme(), replica_, layer, iteration);
    // The previous sync's write may still read the factor buffer the copy below refills.
    if (last_[layer] && !last_[layer]->test()) {
      return transport::failedRequest(
          std::move(what), makeStatus(StatusCode::kInvalidArgument, "the layer's previous Adam sync is still running"));
    }
    const size_t index = fc_index_[layer];
    std::span<float> u = adam_->u(index), v = adam_->v(index);
    if (u.size() != replica_.u(layer).size() || v.size() != replica_.v(layer).size()) {
      return transport::failedRequest(
          std::move(what), makeStatus(StatusCode::kInternal, "factors of {} + {} floats, the Adam layer has {} + {}",
                                      replica_.u(layer).size(), replica_.v(layer).size(), u.size(), v.size()));
    }
    std::copy(replica_.u(layer).begin(), replica_.u(layer).end(), u.begin());
    std::copy(replica_.v(layer).begin(), replica_.v(layer).end(), v.begin());
    transport::RequestPtr summed = adam_->start(index, deadline);
    last_[layer] = driver_.submit(std::move(what), [this, layer, index, iteration, summed] {
      (void)summed->wait(Deadline::never());  // the wait keeps its own deadline
      POSEIDON_RETURN_IF_ERROR(summed->status());
      return replica_.applyStep(layer, adam_->gradient(index).data(), iteration);
    });
    return last_[layer];
  }

  scheme::Traffic traffic(size_t layer) const override {
    return layer < fc_index_.size() && replica_.isFc(layer) ? adam_->traffic(fc_index_[layer]) : scheme::Traffic{};
  }
  Status finish(Deadline deadline) override { return adam_->finish(deadline); }

 private:
  std::unique_ptr<adam::AdamWorker> adam_;
  std::vector<size_t> fc_index_;
  Replica& replica_;
  std::vector<transport::RequestPtr> last_;  // per layer: its latest sync (start() runs on one thread)
  scheme::SerialDriver driver_;
};

class SfbSyncer final : public Syncer {
 public:
  SfbSyncer(std::unique_ptr<sfb::SfBroadcast> sfb, std::vector<size_t> fc_index, Replica& replica)
      : sfb_(std::move(sfb)), fc_index_(std::move(fc_index)), replica_(replica) {}

  scheme::Scheme scheme() const override { return scheme::Scheme::kSfb; }

  // The SFB object runs the fused reconstruction and step itself on its driver.
  transport::RequestPtr start(size_t layer, uint64_t iteration, Deadline deadline) override {
    if (layer >= replica_.layerCount() || !replica_.isFc(layer)) return unknownLayer(scheme(), replica_, layer);
    const sfb::SfBroadcast::Target target{replica_.params(layer).data(), replica_.state0(layer),
                                          replica_.state1(layer)};
    return sfb_->start(fc_index_[layer], target, replica_.optimizer().stepFor(iteration), deadline);
  }

  scheme::Traffic traffic(size_t layer) const override {
    return layer < fc_index_.size() && replica_.isFc(layer) ? sfb_->traffic(fc_index_[layer]) : scheme::Traffic{};
  }
  Status finish(Deadline) override { return Status::ok(); }

 private:
  std::unique_ptr<sfb::SfBroadcast> sfb_;
  std::vector<size_t> fc_index_;
  Replica& replica_;
};

}  // namespace

std::unique_ptr<Syncer> makePsSyncer(std::unique_ptr<ps::Client> client, const ps::ChunkLayout& layout,
                                     Replica& replica) {
  return std::make_unique<PsSyncer>(std::move(client), layout, replica);
}

std::unique_ptr<Syncer> makeRingSyncer(std::unique_ptr<ring::RingAllreduce> ring, Replica& replica) {
  return std::make_unique<RingSyncer>(std::move(ring), replica);
}

std::unique_ptr<Syncer> makeAdamSyncer(std::unique_ptr<adam::AdamWorker> adam, std::vector<size_t> fc_index,
                                       Replica& replica) {
  return std::make_unique<AdamSyncer>(std::move(adam), std::move(fc_index), replica);
}

Result<std::unique_ptr<Syncer>> makeSfbSyncer(std::unique_ptr<sfb::SfBroadcast> sfb, std::vector<size_t> fc_index,
                                              Replica& replica) {
  for (size_t l = 0; l < replica.layerCount(); ++l) {
    if (!replica.isFc(l)) continue;
    POSEIDON_RETURN_IF_ERROR(replica.bindFactors(l, sfb->u(fc_index[l]), sfb->v(fc_index[l])));
  }
  return std::unique_ptr<Syncer>(std::make_unique<SfbSyncer>(std::move(sfb), std::move(fc_index), replica));
}

}  // namespace poseidon::trainer
