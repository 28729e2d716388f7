#include "kernels/chunk_update_check.h"

#include <fmt/format.h>

#include "kernels/update_check.h"

namespace poseidon::kernels {

std::string chunkUpdateProblem(const ChunkUpdate& update) {
  if (kindName(update.step.kind) == nullptr) return stepProblem(update.step, nullptr, nullptr);
  if (update.params == nullptr) return "params is null";
  if (update.gradients.empty()) return "gradients is empty (need at least one)";
  for (size_t k = 0; k < update.gradients.size(); ++k) {
    if (update.gradients[k] == nullptr) return fmt::format("gradients[{}] is null", k);
  }
  if (std::string problem = stepProblem(update.step, update.state0, update.state1); !problem.empty()) return problem;
  std::vector<BufferRange> read;
  for (size_t k = 0; k < update.gradients.size(); ++k) {
    read.push_back(rangeOf(fmt::format("gradients[{}]", k), update.gradients[k], update.count));
  }
  return overlapProblem(writtenRanges(update.step, update.params, update.state0, update.state1, update.count), read);
}

}  // namespace poseidon::kernels
