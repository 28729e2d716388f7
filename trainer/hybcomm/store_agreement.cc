#include "trainer/hybcomm/store_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace poseidon::trainer {

Agree storeAgreement(transport::bootstrap::Store& store, std::string scope, int rank, int workers,
                     std::chrono::milliseconds timeout) {
  auto round = std::make_shared<uint64_t>(0);
  return [&store, scope = std::move(scope), rank, workers, timeout,
          round](std::span<const double> mine) -> Result<std::vector<double>> {
    const uint64_t r = (*round)++;
    // Doubles travel as their bytes: every worker runs the same build on the same architecture.
    std::vector<uint8_t> bytes(mine.size() * sizeof(double));
    if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
    POSEIDON_RETURN_IF_ERROR(store.set(fmt::format("{}/agree/{}/{}", scope, r, rank), bytes));
    std::vector<double> combined(mine.begin(), mine.end());
    const auto deadline = Deadline::after(timeout);
    for (int w = 0; w < workers; ++w) {
      if (w == rank) continue;
      auto theirs = store.get(fmt::format("{}/agree/{}/{}", scope, r, w), deadline);
      if (!theirs) {
        return makeStatus(theirs.status().code(), "HybComm agreement round {}: worker {}: {}", r, w,
                          theirs.status().message());
      }
      if (theirs->size() != bytes.size()) {
        return makeStatus(StatusCode::kProtocolError,
                          "HybComm agreement round {}: worker {} sent {} bytes, expected {} ({} values)", r, w,
                          theirs->size(), bytes.size(), mine.size());
      }
      for (size_t i = 0; i < combined.size(); ++i) {
        double value = 0;
        std::memcpy(&value, theirs->data() + i * sizeof(double), sizeof(double));
        combined[i] = std::max(combined[i], value);
      }
    }
    return combined;
  };
}

}  // namespace poseidon::trainer
