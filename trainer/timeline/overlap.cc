#include "trainer/timeline/overlap.h"

#include <algorithm>
#include <map>
#include <utility>

namespace poseidon::trainer::timeline {
namespace {

// Total length of the union of [start, end) ranges.
int64_t unionLength(std::vector<std::pair<int64_t, int64_t>> ranges) {
  std::sort(ranges.begin(), ranges.end());
  int64_t total = 0;
  int64_t covered_to = INT64_MIN;
  for (auto [start, end] : ranges) {
    start = std::max(start, covered_to);
    if (end > start) {
      total += end - start;
      covered_to = end;
    }
  }
  return total;
}

}  // namespace

Result<std::vector<SyncOverlap>> syncOverlapsWithBackwardBelow(const Trace& trace,
                                                               const std::vector<std::string>& layers) {
  std::map<std::string, size_t> depth;  // layer -> its place from the input
  for (size_t i = 0; i < layers.size(); ++i) depth.emplace(layers[i], i);
  std::vector<std::pair<size_t, const Interval*>> backward;  // (depth, interval)
  std::vector<std::pair<size_t, const Interval*>> syncs;
  for (const Interval& interval : trace.intervals) {
    if (interval.category != Category::kBackward && interval.category != Category::kSync) continue;
    auto found = depth.find(trace.nameOf(interval));
    if (found == depth.end()) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "timeline of {}: {} interval of layer \"{}\", not among the {} layers given", trace.process,
                        categoryName(interval.category), trace.nameOf(interval), layers.size());
    }
    (interval.category == Category::kSync ? syncs : backward).emplace_back(found->second, &interval);
  }
  std::vector<SyncOverlap> result;
  result.reserve(syncs.size());
  for (const auto& [sync_depth, sync] : syncs) {
    SyncOverlap overlap{*sync, {}, 0};
    std::vector<std::pair<int64_t, int64_t>> covered;
    for (const auto& [backward_depth, pass] : backward) {
      const int64_t start = std::max(sync->start_ns, pass->start_ns);
      const int64_t end = std::min(sync->end_ns, pass->end_ns);
      if (backward_depth < sync_depth && start < end) {
        overlap.backward.push_back(*pass);
        covered.emplace_back(start, end);
      }
    }
    overlap.overlapped_ns = unionLength(std::move(covered));
    result.push_back(std::move(overlap));
  }
  return result;
}

}  // namespace poseidon::trainer::timeline
