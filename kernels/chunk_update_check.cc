#include "kernels/chunk_update_check.h"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace poseidon::kernels {
namespace {

// A buffer of the update as a byte range; compared as integers because ordering pointers into
// different arrays is unspecified in C++.
struct Range {
  std::string name;
  uintptr_t begin;
  uintptr_t end;
};

Range rangeOf(std::string name, const float* p, size_t count) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  return {std::move(name), begin, begin + count * sizeof(float)};
}

bool overlap(const Range& a, const Range& b) { return a.begin < b.end && b.begin < a.end; }

}  // namespace

std::string chunkUpdateProblem(const ChunkUpdate& update) {
  const OptimizerStep& step = update.step;
  const char* kind = kindName(step.kind);
  if (kind == nullptr) {
    return fmt::format("step.kind {} is not sgd (1), adagrad (2) or adam (3)", static_cast<int>(step.kind));
  }
  if (update.params == nullptr) return "params is null";
  if (update.gradients.empty()) return "gradients is empty (need at least one)";
  for (size_t k = 0; k < update.gradients.size(); ++k) {
    if (update.gradients[k] == nullptr) return fmt::format("gradients[{}] is null", k);
  }
  const int words = stateWords(step.kind, step.momentum);
  const std::string needs = step.kind == OptimizerKind::kSgd
                                ? fmt::format("sgd with momentum {} needs {} state word(s) per parameter",
                                              step.momentum, words)
                                : fmt::format("{} needs {} state word(s) per parameter", kind, words);
  if (words >= 1 && update.state0 == nullptr) return "state0 is null but " + needs;
  if (words >= 2 && update.state1 == nullptr) return "state1 is null but " + needs;

  std::vector<Range> written = {rangeOf("params", update.params, update.count)};
  if (words >= 1) written.push_back(rangeOf("state0", update.state0, update.count));
  if (words >= 2) written.push_back(rangeOf("state1", update.state1, update.count));
  std::vector<Range> touched = written;
  for (size_t k = 0; k < update.gradients.size(); ++k) {
    touched.push_back(rangeOf(fmt::format("gradients[{}]", k), update.gradients[k], update.count));
  }
  for (size_t a = 0; a < written.size(); ++a) {
    for (size_t b = a + 1; b < touched.size(); ++b) {
      if (overlap(written[a], touched[b])) {
        return fmt::format("{} overlaps {} ({} elements each); the update needs separate buffers", written[a].name,
                           touched[b].name, update.count);
      }
    }
  }
  return {};
}

}  // namespace poseidon::kernels
