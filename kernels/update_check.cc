#include "kernels/update_check.h"

#include <fmt/format.h>

namespace poseidon::kernels {

std::string stepProblem(const OptimizerStep& step, const float* state0, const float* state1) {
  const char* kind = kindName(step.kind);
  if (kind == nullptr) {
    return fmt::format("step.kind {} is not sgd (1), adagrad (2) or adam (3)", static_cast<int>(step.kind));
  }
  const int words = stateWords(step.kind, step.momentum);
  const std::string needs =
      step.kind == OptimizerKind::kSgd
          ? fmt::format("sgd with momentum {} needs {} state word(s) per parameter", step.momentum, words)
          : fmt::format("{} needs {} state word(s) per parameter", kind, words);
  if (words >= 1 && state0 == nullptr) return "state0 is null but " + needs;
  if (words >= 2 && state1 == nullptr) return "state1 is null but " + needs;
  return {};
}

BufferRange rangeOf(std::string name, const float* p, size_t count) {
  const auto begin = reinterpret_cast<uintptr_t>(p);
  return {std::move(name), begin, begin + count * sizeof(float)};
}

std::vector<BufferRange> writtenRanges(const OptimizerStep& step, float* params, float* state0, float* state1,
                                       size_t count) {
  const int words = stateWords(step.kind, step.momentum);
  std::vector<BufferRange> written = {rangeOf("params", params, count)};
  if (words >= 1) written.push_back(rangeOf("state0", state0, count));
  if (words >= 2) written.push_back(rangeOf("state1", state1, count));
  return written;
}

std::string overlapProblem(const std::vector<BufferRange>& written, const std::vector<BufferRange>& read) {
  auto overlap = [](const BufferRange& a, const BufferRange& b) { return a.begin < b.end && b.begin < a.end; };
  auto describe = [](const BufferRange& a, const BufferRange& b) {
    return fmt::format("{} overlaps {} ({} and {} bytes); the update needs separate buffers", a.name, b.name,
                       a.end - a.begin, b.end - b.begin);
  };
  for (size_t a = 0; a < written.size(); ++a) {
    for (size_t b = a + 1; b < written.size(); ++b) {
      if (overlap(written[a], written[b])) return describe(written[a], written[b]);
    }
    for (const BufferRange& r : read) {
      if (overlap(written[a], r)) return describe(written[a], r);
    }
  }
  return {};
}

}  // namespace poseidon::kernels
