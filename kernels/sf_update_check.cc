#include "kernels/sf_update_check.h"

#include <fmt/format.h>

#include "kernels/update_check.h"

namespace poseidon::kernels {

std::string sfUpdateProblem(const SfUpdate& update) {
  if (std::string problem = stepProblem(update.step, update.state0, update.state1); !problem.empty()) return problem;
  if (update.method != SfMethod::kExact && update.method != SfMethod::kBlas) {
    return fmt::format("method {} is not exact (1) or blas (2)", static_cast<int>(update.method));
  }
  if (isaName(update.isa) == nullptr) {
    return fmt::format("isa {} is not auto (0), generic (1), avx2 (2) or avx512 (3)", static_cast<int>(update.isa));
  }
  if (update.params == nullptr) return "params is null";
  if (update.u.empty()) return "u is empty (need one factor per peer)";
  if (update.u.size() != update.v.size()) {
    return fmt::format("u has {} factors but v has {}", update.u.size(), update.v.size());
  }
  for (size_t p = 0; p < update.u.size(); ++p) {
    if (update.u[p] == nullptr) return fmt::format("u[{}] is null", p);
    if (update.v[p] == nullptr) return fmt::format("v[{}] is null", p);
  }
  std::vector<BufferRange> read;
  for (size_t p = 0; p < update.u.size(); ++p) {
    read.push_back(rangeOf(fmt::format("u[{}]", p), update.u[p], update.rows * update.rank));
    read.push_back(rangeOf(fmt::format("v[{}]", p), update.v[p], update.cols * update.rank));
  }
  const size_t count = update.rows * update.cols;
  return overlapProblem(writtenRanges(update.step, update.params, update.state0, update.state1, count), read);
}

std::string sfUpdateCpuProblem(const SfUpdate& update) {
  if (std::string problem = sfUpdateProblem(update); !problem.empty()) return problem;
  if (update.method == SfMethod::kBlas && !sfBlasAvailable()) {
    return "method blas needs a build with OpenBLAS (libopenblas-dev); this one has none";
  }
  if (update.method == SfMethod::kExact && !cpuHasIsa(update.isa)) {
    return fmt::format("isa {} is not supported by this CPU", isaName(update.isa));
  }
  return {};
}

}  // namespace poseidon::kernels
