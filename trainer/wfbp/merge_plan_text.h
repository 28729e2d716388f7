// A merge plan as text: for the log, for the JSON summary, and from the user (a fixed plan).
//
// The groups' syntax is the same both ways, so a logged plan can be given back as a fixed one:
// comma-separated groups in backward order, each "first-last" or a lone position: "0-3,4,5-9"
// (positions as in merge_plan.h: 0 is the layer whose gradient is ready first).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "trainer/wfbp/merge_plan.h"

namespace poseidon::trainer {

// "0-3,4,5-9"
std::string formatMergeGroups(const std::vector<MergeGroup>& groups);

// "merge plan 0-3,4,5-9: 3 messages for 10 layers; predicted 12.345 ms (backward 10.000 ms +
// tail 2.345 ms), 15.100 ms without merging; T(M) = 120.000 us + M / 1.250 GB/s"
std::string describeMergePlan(const MergePlan& plan);

// The plan's fields, named as the JSON summary names them.
struct MergePlanFields {
  std::string groups;  // formatMergeGroups
  size_t layers = 0;
  size_t messages = 0;  // groups
  double predicted_s = 0;
  double unmerged_s = 0;
  double backward_s = 0;
  double tail_s = 0;
  double latency_s = 0;         // a
  double seconds_per_byte = 0;  // b
};
MergePlanFields mergePlanFields(const MergePlan& plan);
// The same fields as one JSON object's text ({"groups": "0-3,4,5-9", "layers": 10, ...}).
std::string mergePlanJson(const MergePlan& plan);

// Parses the groups of a fixed plan over `layer_count` layers. Fails naming the bad token: not a
// number or a range of two, a range that ends before it starts, a position past the last layer, a
// group that does not start where the previous one ended (a gap, an overlap, out of order), or
// layers left over at the end. Whether unmergeable layers stand alone is makeMergePlan's check.
Result<std::vector<MergeGroup>> parseMergeGroups(std::string_view text, size_t layer_count);

}  // namespace poseidon::trainer
