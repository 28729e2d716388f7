// MergePlan: which consecutive layers' gradients travel as one message, and the iteration time
// that predicts under the timing model of [MG-WFBP] section III (Eqs. 19-21).
//
// Layers are numbered by position in backward order: 0 is the layer whose gradient is ready
// first (the paper's layer L, the one nearest the loss), L-1 the last (layer 1). A group is a
// contiguous range of positions; its one message starts when the group's last layer (highest
// position) is ready AND the previous group's message has ended (one link, messages one at a
// time), and lasts T(sum of the group's bytes). The prediction counts from the start of the
// backward pass to the end of the last message: the backward compute plus the communication
// tail it could not hide (t_b + t_no; the forward pass, the same for every plan, is left out).
//
// An unmergeable layer (an SFB layer: its factors are not a plain tensor to concatenate) is a
// group of its own; its message may be priced apart from T(M) (own_comm_s), e.g. by the cost
// model's SFB traffic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"
#include "trainer/wfbp/message_cost.h"

namespace poseidon::trainer {

struct MergeLayer {
  double backward_s = 0;        // the layer's backward compute (t_b^(l)), seconds
  uint64_t gradient_bytes = 0;  // what its sync sends as a plain tensor (p^(l) in bytes)
  bool mergeable = true;        // false: never merged with another layer (SFB)
  // Unmergeable layers only: their message's time when it is not T(gradient_bytes).
  std::optional<double> own_comm_s;
};

// Positions first..last, inclusive, in backward order.
struct MergeGroup {
  size_t first = 0;
  size_t last = 0;

  size_t size() const { return last - first + 1; }
  bool operator==(const MergeGroup&) const = default;
};

struct MergePlan {
  std::vector<MergeGroup> groups;  // in backward order, covering every layer once
  MessageCost cost;
  double predicted_s = 0;  // backward compute + the communication tail, with these groups
  double unmerged_s = 0;   // the same with every layer its own group (plain WFBP)
  double backward_s = 0;   // the backward compute alone (the sum of the layers')

  size_t layerCount() const { return groups.empty() ? 0 : groups.back().last + 1; }
  double tailSeconds() const { return predicted_s - backward_s; }
};

// Fails, naming the layer and the value, for an empty model, a negative or non-finite time or
// cost, an own_comm_s on a mergeable layer, or a total size that overflows.
Status validateMergeInput(std::span<const MergeLayer> layers, const MessageCost& cost);

// Fails, naming the group, unless `groups` are in order, contiguous, cover 0..layers-1 once, and
// hold every unmergeable layer alone.
Status validateGroups(std::span<const MergeLayer> layers, std::span<const MergeGroup> groups);

// Every layer its own group.
std::vector<MergeGroup> unmergedGroups(size_t layer_count);

// One group's message: its own_comm_s when it is one layer that has it, else T(the group's bytes).
double groupCommSeconds(std::span<const MergeLayer> layers, const MessageCost& cost, const MergeGroup& group);

// The timing model on valid input (validate first): seconds from the backward pass's start to the
// end of the last group's message.
double simulateBackward(std::span<const MergeLayer> layers, const MessageCost& cost,
                        std::span<const MergeGroup> groups);

// A plan of given groups (a fixed plan, or the planner's) with both predictions; validates all.
Result<MergePlan> makeMergePlan(std::span<const MergeLayer> layers, const MessageCost& cost,
                                std::vector<MergeGroup> groups);

}  // namespace poseidon::trainer
