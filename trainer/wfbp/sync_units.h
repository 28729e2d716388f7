// SyncUnits: which of the trainer's layers the schemes synchronise together ([MG-WFBP]'s merged
// gradients), as the pipeline and the Session see it.
//
// A unit is a run of consecutive layers (forward indices first..last) synced as one layer of the
// schemes' model (unitModel): one chunk sequence on the PS, one all-reduce on the ring, so the
// run pays one message latency instead of one per layer. A unit of one layer is that layer as it
// is (an FC layer keeps its factors: SFB is never merged); a unit of several is an "other"
// layer holding every member's tensors, weight and bias, in forward order, named
// "<first>..<last>". The optimizer is element-wise, so a merged unit's update is the members'
// updates: the same bits (the PS sums each float in rank order whatever the chunking).
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/model.h"
#include "trainer/sync/layer_sync.h"
#include "trainer/wfbp/merge_plan.h"

namespace poseidon::trainer {

class SyncUnits {
 public:
  // Every layer a unit of its own.
  static SyncUnits unmerged(const model::Model& layers);
  // The plan's groups, whose positions are in backward order (position p is layer L-1-p: the
  // trainer reports from the output down). Fails naming the group for one that is not a run of
  // the model, or that merges an FC layer with another (its factors are no plain tensor).
  static Result<SyncUnits> fromPlan(const model::Model& layers, std::span<const MergeGroup> groups);

  // The trainer's layers, and the schemes' (one layer per unit).
  const model::Model& layers() const { return layers_; }
  const model::Model& unitModel() const { return unit_model_; }
  size_t layerCount() const { return unit_of_layer_.size(); }
  size_t unitCount() const { return first_.size(); }

  size_t unitOf(size_t layer) const { return unit_of_layer_[layer]; }
  size_t firstLayer(size_t unit) const { return first_[unit]; }
  size_t lastLayer(size_t unit) const { return last_[unit]; }
  size_t memberCount(size_t unit) const { return last_[unit] - first_[unit] + 1; }
  bool merged(size_t unit) const { return memberCount(unit) > 1; }
  // Where the layer's parameters (and gradient) start in its unit's, in floats.
  size_t offsetInUnit(size_t layer) const { return offset_[layer]; }
  size_t floats(size_t layer) const { return layers_.layers()[layer].params(); }

  // Copies a unit's parameters (`unit_params`: unitModel() layer `unit`) out to its layers, whose
  // buffers `layer_buffer(l)` gives. Allocates nothing: the pipeline does it per completed sync.
  template <typename LayerBuffer>
  void scatter(size_t unit, std::span<const float> unit_params, LayerBuffer&& layer_buffer) const {
    for (size_t l = first_[unit]; l <= last_[unit]; ++l) {
      std::span<const float> part = unit_params.subspan(offset_[l], floats(l));
      std::span<float> to = layer_buffer(l);
      std::copy(part.begin(), part.end(), to.begin());
    }
  }

  // "conv1..conv3,fc1,fc2": the units by their layers' names, for logs.
  std::string describe() const;

 private:
  model::Model layers_;
  model::Model unit_model_;
  std::vector<size_t> unit_of_layer_, offset_;
  std::vector<size_t> first_, last_;
};

// Binds each unit's parameters in `sync` (whose layers are units.unitModel()'s): a unit of one
// layer to that layer's buffer, synced in place; a merged unit keeps its own memory, filled here
// from its layers' buffers (the pipeline copies each update back to them).
Status bindUnitParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params);
// Refills the merged units' memory from the layers' buffers (after a restore rewrote them).
void gatherMergedParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params);
// The reverse: the merged units' memory out to the layers' buffers (after the sync itself wrote
// it, as the servers' initial model under SSP / async does).
void scatterMergedParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params);

}  // namespace poseidon::trainer
