#include "tests/trainer/api/reference_combiner.h"

#include "adam/adam_server.h"
#include "kernels/dispatch.h"
#include "kernels/sf_bias.h"
#include "kernels/sf_update.h"

namespace poseidon::testing {

ReferenceCombiner::ReferenceCombiner(const model::Model& model, const kernels::OptimizerConfig& optimizer, int workers)
    : workers_count_(workers), full_(static_cast<size_t>(workers)) {
  kernels::OptimizerConfig mean = optimizer;
  mean.grad_scale = 1.0f / static_cast<float>(workers);
  for (int p = 0; p < workers; ++p) workers_.push_back(std::make_unique<trainer::Replica>(model, mean));
  result_ = std::make_unique<trainer::Replica>(model, mean);
}

Status ReferenceCombiner::sumLikePs() {
  // The summation server: a zeroed chunk, then SGD lr = -1 over the P pushes in rank order.
  std::vector<const float*> pushes;
  for (const auto& g : full_) pushes.push_back(g.data());
  kernels::OptimizerConfig sum;
  sum.sum_only = true;
  std::fill(summed_.begin(), summed_.end(), 0.0f);
  kernels::ChunkUpdate update;
  update.params = summed_.data();
  update.count = summed_.size();
  update.gradients = pushes;
  update.step = sum.stepFor(0);
  return kernels::chunkUpdate(update, kernels::Place::cpu());
}

Status ReferenceCombiner::sumLikeRing() {
  const auto p_count = static_cast<uint64_t>(workers_count_);
  const uint64_t x = summed_.size();
  for (uint64_t c = 0; c < p_count; ++c) {
    for (uint64_t i = x * c / p_count; i < x * (c + 1) / p_count; ++i) {
      float acc = full_[c][i];
      for (uint64_t j = 1; j < p_count; ++j) acc = acc + full_[(c + j) % p_count][i];
      summed_[i] = acc;
    }
  }
  return Status::ok();
}

Status ReferenceCombiner::step(size_t layer, scheme::Scheme scheme, uint64_t iteration) {
  trainer::Replica& out = *result_;
  const model::Layer& shape = out.layer(layer);
  const auto floats = static_cast<size_t>(shape.params());
  summed_.assign(floats, 0.0f);
  if (scheme == scheme::Scheme::kSfb) {
    // SfBroadcast::update: the fused reconstruction and step, then the bias.
    const size_t m = shape.fc().rows, n = shape.fc().cols;
    std::vector<const float*> u, v;
    for (const auto& w : workers_) {
      u.push_back(w->u(layer).data());
      v.push_back(w->v(layer).data());
    }
    kernels::SfUpdate update;
    update.params = out.params(layer).data();
    update.state0 = out.state0(layer);
    update.state1 = out.state1(layer);
    update.rows = m;
    update.cols = n;
    update.rank = static_cast<size_t>(out.batch());
    update.u = u;
    update.v = v;
    update.step = out.optimizer().stepFor(iteration);
    update.method = kernels::SfMethod::kExact;
    POSEIDON_RETURN_IF_ERROR(kernels::sfUpdate(update, kernels::Place::cpu()));
    if (!shape.fc().bias) return Status::ok();
    std::vector<float> bias(m);
    kernels::sfBiasGradient(m, update.rank, u, bias.data());
    const float* g = bias.data();
    kernels::ChunkUpdate step;
    step.params = update.params + m * n;
    step.state0 = update.state0 ? update.state0 + m * n : nullptr;
    step.state1 = update.state1 ? update.state1 + m * n : nullptr;
    step.count = m;
    step.gradients = std::span<const float* const>(&g, 1);
    step.step = update.step;
    return kernels::chunkUpdate(step, kernels::Place::cpu());
  }
  if (scheme == scheme::Scheme::kAdam) {
    std::vector<const float*> u, v;
    for (const auto& w : workers_) {
      u.push_back(w->u(layer).data());
      v.push_back(w->v(layer).data());
    }
    POSEIDON_RETURN_IF_ERROR(adam::reconstructAdamGradient(shape, out.batch(), u, v, summed_));
    return out.applyStep(layer, summed_.data(), iteration);
  }
  for (size_t p = 0; p < workers_.size(); ++p) {
    full_[p].assign(floats, 0.0f);
    POSEIDON_RETURN_IF_ERROR(workers_[p]->loadGradient(layer, full_[p]));
  }
  POSEIDON_RETURN_IF_ERROR(scheme == scheme::Scheme::kRing ? sumLikeRing() : sumLikePs());
  return out.applyStep(layer, summed_.data(), iteration);
}

}  // namespace poseidon::testing
