#include "trainer/sync/replica.h"

#include <algorithm>

#include "kernels/dispatch.h"
#include "kernels/sf_bias.h"

namespace poseidon::trainer {

Replica::Replica(model::Model model, kernels::OptimizerConfig optimizer)
    : model_(std::move(model)), optimizer_(std::move(optimizer)) {
  const int words = optimizer_.stateWords();
  const auto k = static_cast<size_t>(model_.batch());
  for (const model::Layer& layer : model_.layers()) {
    const auto floats = static_cast<size_t>(layer.params());
    const bool fc = layer.isFullyConnected();
    params_storage_.emplace_back(floats, 0.0f);
    state0_.emplace_back(words >= 1 ? floats : 0, optimizer_.stateInitialValue(0));
    state1_.emplace_back(words >= 2 ? floats : 0, optimizer_.stateInitialValue(1));
    gradients_.emplace_back(fc ? 0 : floats, 0.0f);
    u_storage_.emplace_back(fc ? static_cast<size_t>(layer.fc().rows) * k : 0, 0.0f);
    v_storage_.emplace_back(fc ? static_cast<size_t>(layer.fc().cols) * k : 0, 0.0f);
  }
  for (size_t l = 0; l < layerCount(); ++l) {
    params_.emplace_back(params_storage_[l]);
    u_.emplace_back(u_storage_[l]);
    v_.emplace_back(v_storage_[l]);
  }
}

Status Replica::bindFactors(size_t l, std::span<float> u, std::span<float> v) {
  if (l >= layerCount() || !isFc(l) || u.size() != u_[l].size() || v.size() != v_[l].size()) {
    return makeStatus(StatusCode::kInternal, "binding the factors of layer {}: {} + {} floats, expected {} + {}", l,
                      u.size(), v.size(), l < layerCount() ? u_[l].size() : 0, l < layerCount() ? v_[l].size() : 0);
  }
  u_[l] = u;
  v_[l] = v;
  u_storage_[l] = {};
  v_storage_[l] = {};
  return Status::ok();
}

Status Replica::bindParams(size_t l, std::span<float> params) {
  if (l >= layerCount() || params.size() != params_[l].size()) {
    return makeStatus(StatusCode::kInvalidArgument, "binding the parameters of layer {}: {} floats, expected {}", l,
                      params.size(), l < layerCount() ? params_[l].size() : 0);
  }
  params_[l] = params;
  params_storage_[l] = {};
  return Status::ok();
}

Status Replica::loadGradient(size_t l, std::span<float> target) const {
  const model::Layer& layer = this->layer(l);
  if (target.size() != static_cast<size_t>(layer.params())) {
    return makeStatus(StatusCode::kInternal, "loading {}'s gradient into {} floats, expected {}", layer.name(),
                      target.size(), layer.params());
  }
  if (!layer.isFullyConnected()) {
    std::copy(gradients_[l].begin(), gradients_[l].end(), target.begin());
    return Status::ok();
  }
  std::fill(target.begin(), target.end(), 0.0f);  // the bias part is overwritten below
  // Plain SGD with lr = -1 onto zeros: 0 - (-1 * g) = g exactly, g formed in the SF kernel's order.
  kernels::SfUpdate update;
  update.params = target.data();
  update.rows = static_cast<size_t>(layer.fc().rows);
  update.cols = static_cast<size_t>(layer.fc().cols);
  update.rank = static_cast<size_t>(model_.batch());
  const float* uu = u_[l].data();
  const float* vv = v_[l].data();
  update.u = std::span<const float* const>(&uu, 1);
  update.v = std::span<const float* const>(&vv, 1);
  update.step.lr = -1.0f;
  const Status status = kernels::sfUpdate(update, kernels::Place::cpu());
  if (!status.isOk()) return status.withContext(fmt::format("forming {}'s gradient", layer.name()));
  // The bias after the weight, as SFB forms it (a server summing these in rank order gets its bits).
  if (layer.fc().bias)
    kernels::sfBiasGradient(update.rows, update.rank, update.u, target.data() + update.rows * update.cols);
  return Status::ok();
}

Status Replica::applyStep(size_t l, const float* summed, uint64_t iteration) {
  kernels::ChunkUpdate update;
  update.params = params_[l].data();
  update.state0 = state0(l);
  update.state1 = state1(l);
  update.count = params_[l].size();
  update.gradients = std::span<const float* const>(&summed, 1);
  update.step = optimizer_.stepFor(iteration);
  const Status status = kernels::chunkUpdate(update, kernels::Place::cpu());
  if (!status.isOk()) return status.withContext(fmt::format("updating {}", layer(l).name()));
  return Status::ok();
}

}  // namespace poseidon::trainer
