#include "trainer/wfbp/sync_units.h"

#include <fmt/format.h>

#include <algorithm>

namespace poseidon::trainer {

namespace {

// Runs of forward indices [first, last] in forward order, from backward-order groups.
std::vector<std::pair<size_t, size_t>> forwardRuns(size_t layers, std::span<const MergeGroup> groups) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (auto g = groups.rbegin(); g != groups.rend(); ++g)
    runs.emplace_back(layers - 1 - g->last, layers - 1 - g->first);
  return runs;
}

}  // namespace

SyncUnits SyncUnits::unmerged(const model::Model& layers) {
  std::vector<MergeGroup> groups;
  for (size_t p = 0; p < layers.layers().size(); ++p) groups.push_back({p, p});
  return *fromPlan(layers, groups);
}

Result<SyncUnits> SyncUnits::fromPlan(const model::Model& layers, std::span<const MergeGroup> groups) {
  const size_t count = layers.layers().size();
  size_t expected = 0;
  for (const MergeGroup& g : groups) {
    if (g.first != expected || g.last < g.first || g.last >= count) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge group {}-{}: expected groups in backward order covering positions 0..{} once, next "
                        "starting at {}",
                        g.first, g.last, count - 1, expected);
    }
    expected = g.last + 1;
  }
  if (expected != count) {
    return makeStatus(StatusCode::kInvalidArgument, "merge groups cover positions 0..{} of {} layers", expected - 1,
                      count);
  }
  SyncUnits units;
  units.layers_ = layers;
  units.unit_of_layer_.resize(count);
  units.offset_.resize(count);
  std::vector<model::Layer> unit_layers;
  for (const auto& [first, last] : forwardRuns(count, groups)) {
    const size_t unit = units.first_.size();
    units.first_.push_back(first);
    units.last_.push_back(last);
    if (first == last) {
      unit_layers.push_back(layers.layers()[first]);
      units.unit_of_layer_[first] = unit;
      units.offset_[first] = 0;
      continue;
    }
    std::vector<model::NamedCount> tensors;
    size_t offset = 0;
    for (size_t l = first; l <= last; ++l) {
      const model::Layer& member = layers.layers()[l];
      if (member.isFullyConnected()) {
        return makeStatus(StatusCode::kInvalidArgument,
                          "merge group of layers '{}'..'{}' holds the fully-connected layer '{}': an FC layer syncs "
                          "alone (its factors are no plain tensor)",
                          layers.layers()[first].name(), layers.layers()[last].name(), member.name());
      }
      units.unit_of_layer_[l] = unit;
      units.offset_[l] = offset;
      offset += member.params();
      for (const model::Tensor& t : member.tensors()) tensors.push_back({t.name, t.floats});
    }
    unit_layers.push_back(model::Layer::other(
        fmt::format("{}..{}", layers.layers()[first].name(), layers.layers()[last].name()), tensors));
  }
  units.unit_model_ = model::Model(layers.name(), std::move(unit_layers), layers.batch(), layers.input());
  POSEIDON_RETURN_IF_ERROR(units.unit_model_.validate());
  return units;
}

Status bindUnitParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params) {
  for (size_t u = 0; u < units.unitCount(); ++u) {
    if (!units.merged(u)) POSEIDON_RETURN_IF_ERROR(sync.bindParams(u, layer_params[units.firstLayer(u)]));
  }
  gatherMergedParams(sync, units, layer_params);
  return Status::ok();
}

void gatherMergedParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params) {
  for (size_t u = 0; u < units.unitCount(); ++u) {
    if (!units.merged(u)) continue;
    std::span<float> unit = sync.params(u);
    for (size_t l = units.firstLayer(u); l <= units.lastLayer(u); ++l) {
      std::copy(layer_params[l].begin(), layer_params[l].end(), unit.begin() + units.offsetInUnit(l));
    }
  }
}

void scatterMergedParams(LayerSync& sync, const SyncUnits& units, std::span<const std::span<float>> layer_params) {
  for (size_t u = 0; u < units.unitCount(); ++u) {
    if (units.merged(u)) units.scatter(u, sync.params(u), [&](size_t l) { return layer_params[l]; });
  }
}

std::string SyncUnits::describe() const {
  std::string text;
  for (const model::Layer& unit : unit_model_.layers())
    text += fmt::format("{}{}", text.empty() ? "" : ",", unit.name());
  return text;
}

}  // namespace poseidon::trainer
