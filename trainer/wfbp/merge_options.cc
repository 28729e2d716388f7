#include "trainer/wfbp/merge_options.h"

#include "trainer/wfbp/merge_plan_text.h"
#include "trainer/wfbp/merge_planner.h"

namespace poseidon::trainer {

Result<MergeOptions> parseMergeMode(std::string_view text) {
  MergeOptions options;
  if (text == "off") return options;
  if (text == "planned") {
    options.mode = MergeOptions::Mode::kPlanned;
    return options;
  }
  constexpr std::string_view kFixed = "fixed:";
  if (text.substr(0, kFixed.size()) == kFixed && text.size() > kFixed.size()) {
    options.mode = MergeOptions::Mode::kFixed;
    options.groups = std::string(text.substr(kFixed.size()));
    return options;
  }
  return makeStatus(StatusCode::kInvalidArgument,
                    "merge mode '{}': expected off, planned, or fixed:<groups> (positions from the output layer, "
                    "e.g. fixed:0,1,2-9)",
                    text);
}

namespace {

// The planner's view of the model, in backward order (position 0: the output layer).
std::vector<MergeLayer> mergeLayers(const model::Model& layers, std::span<const double> backward_seconds) {
  const auto& all = layers.layers();
  std::vector<MergeLayer> merge;
  for (size_t p = 0; p < all.size(); ++p) {
    const model::Layer& layer = all[all.size() - 1 - p];
    MergeLayer m;
    m.backward_s = backward_seconds.empty() ? 0.0 : backward_seconds[p];
    m.gradient_bytes = layer.params() * sizeof(float);
    m.mergeable = !layer.isFullyConnected();
    merge.push_back(m);
  }
  return merge;
}

}  // namespace

Result<MergeSetup> planMergeUnits(const model::Model& layers, const MergeOptions& options) {
  const size_t count = layers.layers().size();
  if (options.mode == MergeOptions::Mode::kOff) return MergeSetup{SyncUnits::unmerged(layers), std::nullopt};
  Result<MergePlan> plan = MergePlan{};
  if (options.mode == MergeOptions::Mode::kFixed) {
    auto groups = parseMergeGroups(options.groups, count);
    if (!groups) return groups.status().withContext("merge option fixed");
    // First as units: an FC layer in a merged group is named by its name, not its position.
    if (auto units = SyncUnits::fromPlan(layers, *groups); !units) return units.status();
    // A fixed plan is predicted with whatever profile was given (zeros: communication alone).
    std::vector<double> backward(options.backward_seconds);
    if (backward.size() != count) backward.assign(count, 0.0);
    plan = makeMergePlan(mergeLayers(layers, backward), options.cost, std::move(*groups));
  } else {
    if (options.backward_seconds.size() != count) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge option planned: {} backward times given, expected one per layer ({}), output layer "
                        "first",
                        options.backward_seconds.size(), count);
    }
    plan = planMerge(mergeLayers(layers, options.backward_seconds), options.cost);
  }
  if (!plan) return plan.status();
  auto units = SyncUnits::fromPlan(layers, plan->groups);
  if (!units) return units.status();
  return MergeSetup{std::move(*units), std::move(*plan)};
}

}  // namespace poseidon::trainer
