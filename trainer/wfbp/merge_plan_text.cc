#include "trainer/wfbp/merge_plan_text.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/text.h"

namespace poseidon::trainer {

namespace {

std::optional<size_t> parsePosition(std::string_view text) {
  text = trimBlanks(text);
  size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// One token, "first-last" or "position", checked against where it must start.
Result<MergeGroup> parseGroup(std::string_view token, size_t expected_first, size_t layer_count) {
  const size_t dash = token.find('-');
  const std::optional<size_t> first = parsePosition(token.substr(0, dash));
  const std::optional<size_t> last = dash == std::string_view::npos ? first : parsePosition(token.substr(dash + 1));
  if (!first || !last) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge plan: token '{}' is not a layer position or a range 'first-last' of them", token);
  }
  if (*last < *first) {
    return makeStatus(StatusCode::kInvalidArgument, "merge plan: token '{}' ends at {}, before its start {}", token,
                      *last, *first);
  }
  if (*last >= layer_count) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge plan: token '{}' names layer {}, past the last of the {} layers ({})", token, *last,
                      layer_count, layer_count - 1);
  }
  if (*first != expected_first) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge plan: token '{}' starts at layer {}, expected {} (groups are listed in backward "
                      "order, each starting right after the previous one, covering every layer once)",
                      token, *first, expected_first);
  }
  return MergeGroup{*first, *last};
}

std::string formatSeconds(double seconds) {
  if (seconds >= 1) return fmt::format("{:.3f} s", seconds);
  if (seconds >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  return fmt::format("{:.3f} us", seconds * 1e6);
}

}  // namespace

std::string formatMergeGroups(const std::vector<MergeGroup>& groups) {
  std::string text;
  for (const MergeGroup& group : groups) {
    if (!text.empty()) text += ',';
    text += group.size() == 1 ? fmt::format("{}", group.first) : fmt::format("{}-{}", group.first, group.last);
  }
  return text;
}

std::string describeMergePlan(const MergePlan& plan) {
  const std::string rate = plan.cost.seconds_per_byte > 0
                               ? fmt::format("M / {:.3f} GB/s", 1e-9 / plan.cost.seconds_per_byte)
                               : std::string("0 per byte");
  return fmt::format(
      "merge plan {}: {} messages for {} layers; predicted {} (backward {} + tail {}), {} without merging; "
      "T(M) = {} + {}",
      formatMergeGroups(plan.groups), plan.groups.size(), plan.layerCount(), formatSeconds(plan.predicted_s),
      formatSeconds(plan.backward_s), formatSeconds(plan.tailSeconds()), formatSeconds(plan.unmerged_s),
      formatSeconds(plan.cost.latency_s), rate);
}

MergePlanFields mergePlanFields(const MergePlan& plan) {
  return {formatMergeGroups(plan.groups),
          plan.layerCount(),
          plan.groups.size(),
          plan.predicted_s,
          plan.unmerged_s,
          plan.backward_s,
          plan.tailSeconds(),
          plan.cost.latency_s,
          plan.cost.seconds_per_byte};
}

std::string mergePlanJson(const MergePlan& plan) {
  const MergePlanFields f = mergePlanFields(plan);
  const nlohmann::json json = {
      {"groups", f.groups},           {"layers", f.layers},         {"messages", f.messages},
      {"predicted_s", f.predicted_s}, {"unmerged_s", f.unmerged_s}, {"backward_s", f.backward_s},
      {"tail_s", f.tail_s},           {"latency_s", f.latency_s},   {"seconds_per_byte", f.seconds_per_byte}};
  return json.dump();
}

Result<std::vector<MergeGroup>> parseMergeGroups(std::string_view text, size_t layer_count) {
  if (layer_count == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "merge plan '{}': the model has no layers", text);
  }
  if (trimBlanks(text).empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "merge plan: empty, expected groups such as '0-3,4,5-{}' covering the {} layers", layer_count - 1,
                      layer_count);
  }
  std::vector<MergeGroup> groups;
  size_t next = 0;
  for (std::string_view item : splitList(text)) {
    const std::string_view token = trimBlanks(item);
    if (next == layer_count) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "merge plan: token '{}' comes after every layer was grouped (the last one is {})", token,
                        layer_count - 1);
    }
    auto group = parseGroup(token, next, layer_count);
    if (!group) return group.status();
    groups.push_back(*group);
    next = group->last + 1;
  }
  if (next != layer_count) {
    return makeStatus(StatusCode::kInvalidArgument, "merge plan '{}': layers {}-{} are in no group", text, next,
                      layer_count - 1);
  }
  return groups;
}

}  // namespace poseidon::trainer
