#include "trainer/hybcomm/store_agreement.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "transport/bootstrap/store_view.h"

namespace poseidon::trainer {

Agree storeAgreement(transport::bootstrap::Store& store, std::string scope, int rank, int workers,
                     std::chrono::milliseconds timeout) {
  auto round = std::make_shared<uint64_t>(0);
  // "<scope>/agree/<round>/<rank>"; the view refers to `store`, which outlives the Agree.
  return [rounds = transport::bootstrap::StoreView(store, std::move(scope)).child("agree"), rank, workers, timeout,
          round](std::span<const double> mine) -> Result<std::vector<double>> {
    const uint64_t r = (*round)++;
    transport::bootstrap::StoreView this_round = rounds.child(std::to_string(r));
    // Doubles travel as their bytes: every worker runs the same build on the same architecture.
    std::vector<uint8_t> bytes(mine.size() * sizeof(double));
    if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
    POSEIDON_RETURN_IF_ERROR(this_round.set(std::to_string(rank), bytes));
    std::vector<double> combined(mine.begin(), mine.end());
    const auto deadline = Deadline::after(timeout);
    for (int w = 0; w < workers; ++w) {
      if (w == rank) continue;
      auto theirs = this_round.get(std::to_string(w), deadline);
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
