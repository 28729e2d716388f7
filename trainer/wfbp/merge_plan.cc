#include "trainer/wfbp/merge_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace poseidon::trainer {

namespace {

bool finiteNonNegative(double value) { return std::isfinite(value) && value >= 0; }

}  // namespace

Status validateMergeInput(std::span<const MergeLayer> layers, const MessageCost& cost) {
  if (layers.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "merge planning: the model has no layers, expected at least 1");
  }
  if (!finiteNonNegative(cost.latency_s)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge planning: message latency a = {} s, expected a finite value >= 0", cost.latency_s);
  }
  if (!finiteNonNegative(cost.seconds_per_byte)) {
    return makeStatus(StatusCode::kInvalidArgument, "merge planning: b = {} s per byte, expected a finite value >= 0",
                      cost.seconds_per_byte);
  }
  uint64_t total_bytes = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const MergeLayer& layer = layers[i];
    if (!finiteNonNegative(layer.backward_s)) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge planning: layer {} (backward order) has backward time {} s, expected a finite "
                        "value >= 0",
                        i, layer.backward_s);
    }
    if (layer.own_comm_s && layer.mergeable) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge planning: layer {} (backward order) is mergeable but has its own communication "
                        "time {} s; only an unmergeable layer's message may be priced apart from T(M)",
                        i, *layer.own_comm_s);
    }
    if (layer.own_comm_s && !finiteNonNegative(*layer.own_comm_s)) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge planning: layer {} (backward order) has communication time {} s, expected a finite "
                        "value >= 0",
                        i, *layer.own_comm_s);
    }
    if (layer.gradient_bytes > std::numeric_limits<uint64_t>::max() - total_bytes) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge planning: the layers' gradients overflow 64 bits at layer {} ({} bytes)", i,
                        layer.gradient_bytes);
    }
    total_bytes += layer.gradient_bytes;
  }
  return Status::ok();
}

Status validateGroups(std::span<const MergeLayer> layers, std::span<const MergeGroup> groups) {
  size_t next = 0;  // the first position no group has covered yet
  for (const MergeGroup& group : groups) {
    if (group.first != next || group.last < group.first) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge plan: group {}-{} should start at layer {} and not end before it starts (groups "
                        "are contiguous, in backward order, covering every layer once)",
                        group.first, group.last, next);
    }
    if (group.last >= layers.size()) {
      return makeStatus(StatusCode::kInvalidArgument, "merge plan: group {}-{} goes past the last layer, {}",
                        group.first, group.last, layers.size() - 1);
    }
    if (group.size() > 1) {
      for (size_t i = group.first; i <= group.last; ++i) {
        if (!layers[i].mergeable) {
          return makeStatus(StatusCode::kInvalidArgument,
                            "merge plan: group {}-{} holds layer {}, which may not be merged (it travels alone, "
                            "as an SFB layer does)",
                            group.first, group.last, i);
        }
      }
    }
    next = group.last + 1;
  }
  if (next != layers.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "merge plan: layers {}-{} are in no group", next,
                      layers.size() - 1);
  }
  return Status::ok();
}

std::vector<MergeGroup> unmergedGroups(size_t layer_count) {
  std::vector<MergeGroup> groups(layer_count);
  for (size_t i = 0; i < layer_count; ++i) groups[i] = {i, i};
  return groups;
}

double groupCommSeconds(std::span<const MergeLayer> layers, const MessageCost& cost, const MergeGroup& group) {
  if (group.size() == 1 && layers[group.first].own_comm_s) return *layers[group.first].own_comm_s;
  uint64_t bytes = 0;
  for (size_t i = group.first; i <= group.last; ++i) bytes += layers[i].gradient_bytes;
  return cost.seconds(bytes);
}

double simulateBackward(std::span<const MergeLayer> layers, const MessageCost& cost,
                        std::span<const MergeGroup> groups) {
  double ready = 0;     // when the current layer's gradient is ready ([MG-WFBP] tau_b + t_b)
  double link_end = 0;  // when the previous group's message ended
  size_t layer = 0;
  for (const MergeGroup& group : groups) {
    for (; layer <= group.last; ++layer) ready += layers[layer].backward_s;
    link_end = std::max(ready, link_end) + groupCommSeconds(layers, cost, group);  // [MG-WFBP] Eq. 20
  }
  return std::max(ready, link_end);
}

Result<MergePlan> makeMergePlan(std::span<const MergeLayer> layers, const MessageCost& cost,
                                std::vector<MergeGroup> groups) {
  POSEIDON_RETURN_IF_ERROR(validateMergeInput(layers, cost));
  POSEIDON_RETURN_IF_ERROR(validateGroups(layers, groups));
  MergePlan plan;
  plan.cost = cost;
  for (const MergeLayer& layer : layers) plan.backward_s += layer.backward_s;
  plan.predicted_s = simulateBackward(layers, cost, groups);
  plan.unmerged_s = simulateBackward(layers, cost, unmergedGroups(layers.size()));
  plan.groups = std::move(groups);
  return plan;
}

}  // namespace poseidon::trainer
