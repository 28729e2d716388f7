#include "trainer/wfbp/merge_planner.h"

#include <algorithm>
#include <vector>

namespace poseidon::trainer {

namespace {

// A merge must save more than rounding: sums of the same times taken in another order differ by
// a few ulps, and such a "saving" would merge layers that gain nothing (a = 0).
constexpr double kRelativeTie = 1e-12;

}  // namespace

Result<MergePlan> planMerge(std::span<const MergeLayer> layers, const MessageCost& cost) {
  POSEIDON_RETURN_IF_ERROR(validateMergeInput(layers, cost));
  const size_t count = layers.size();
  // ready[e]: when layer e's gradient is ready, accumulated in the order simulateBackward uses.
  std::vector<double> ready(count);
  double now = 0;
  for (size_t e = 0; e < count; ++e) ready[e] = now += layers[e].backward_s;
  // end[e]: the earliest time the messages of layers 0..e can all have ended, with a group ending
  // at e; start[e]: the first layer of that group.
  std::vector<double> end(count);
  std::vector<size_t> start(count);
  for (size_t e = 0; e < count; ++e) {
    double best = 0;
    size_t best_start = e;
    uint64_t bytes = 0;
    // Larger groups (smaller s) are tried later and must win by more than rounding.
    for (size_t s = e + 1; s-- > 0;) {
      if (s < e && (!layers[s].mergeable || !layers[e].mergeable)) break;  // SFB layers travel alone
      bytes += layers[s].gradient_bytes;
      const double comm = s == e && layers[e].own_comm_s ? *layers[e].own_comm_s : cost.seconds(bytes);
      const double previous_end = s == 0 ? 0 : end[s - 1];
      const double candidate = std::max(ready[e], previous_end) + comm;
      if (s == e || candidate < best - kRelativeTie * best) {
        best = candidate;
        best_start = s;
      }
    }
    end[e] = best;
    start[e] = best_start;
  }
  std::vector<MergeGroup> groups;
  for (size_t e = count; e > 0;) {
    const size_t s = start[e - 1];
    groups.push_back({s, e - 1});
    e = s;
  }
  std::reverse(groups.begin(), groups.end());
  return makeMergePlan(layers, cost, std::move(groups));
}

}  // namespace poseidon::trainer
