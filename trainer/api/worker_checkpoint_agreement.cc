#include "trainer/api/worker_checkpoint_agreement.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "ps/checkpoint/resume.h"
#include "trainer/api/worker_checkpoint.h"
#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

Result<uint64_t> agreeOnWorkerCheckpoint(transport::bootstrap::StoreView& resume, const std::string& dir, int rank,
                                         int workers, Deadline deadline) {
  auto readable = readWorkerCheckpointList(dir, static_cast<uint32_t>(rank));
  const std::vector<uint64_t> mine = readable ? *readable : std::vector<uint64_t>{};
  const std::string listed = fmt::format("{}", fmt::join(mine, ","));
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(resume, std::to_string(rank), listed));
  std::vector<uint64_t> common = mine;  // sorted, as every list
  for (int w = 0; w < workers; ++w) {
    auto text = transport::bootstrap::getString(resume, std::to_string(w), deadline);
    if (!text) return text.status();
    auto theirs = ps::parseClockList(resume.key(std::to_string(w)), *text);
    if (!theirs) return theirs.status();
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), theirs->begin(), theirs->end(), std::back_inserter(both));
    common = std::move(both);
  }
  if (common.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "no checkpoint in {} that every worker has (this worker has iterations [{}]{})", dir, listed,
                      readable ? "" : ": " + readable.status().toString());
  }
  return common.back();
}

}  // namespace poseidon::trainer
