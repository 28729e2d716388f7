#include "trainer/api/job_exit.h"

#include <fmt/format.h>

#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

namespace {

constexpr const char* kBarrier = "barrier";

std::string claimKey(int rank) { return fmt::format("claim/{}", rank); }
std::string goneKey(int rank) { return fmt::format("gone/{}", rank); }

// Whether this call claimed `rank`'s arrival (false: somebody did before).
Result<bool> claim(transport::bootstrap::StoreView& exit, int rank) {
  Result<int64_t> claims = exit.add(claimKey(rank), 1);
  if (!claims) return claims.status();
  return *claims == 1;
}

}  // namespace

Status leaveJob(transport::bootstrap::StoreView& exit, int rank, int size, std::span<const int> lost_ranks,
                Deadline deadline) {
  for (int lost : lost_ranks) {
    if (lost < 0 || lost >= size || lost == rank) {
      return makeStatus(StatusCode::kInvalidArgument, "rank {} cannot arrive at the exit for rank {} (ranks 0..{})",
                        rank, lost, size - 1);
    }
    auto claimed = claim(exit, lost);
    if (!claimed) return claimed.status().withContext(fmt::format("arriving at the exit for lost rank {}", lost));
    if (!*claimed) continue;  // it arrived itself, or another server came for it
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::arriveAtBarrier(exit, kBarrier, size).status());
    // Its last word too, so worker 0 does not wait for it.
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(exit, goneKey(lost), "lost"));
  }
  auto claimed = claim(exit, rank);
  if (!claimed) return claimed.status().withContext("arriving at the exit");
  if (!*claimed) {
    return makeStatus(StatusCode::kUnavailable,
                      "a server finished the job without rank {}: it took the rank for lost (a connection of it "
                      "broke) and arrived at the exit in its place",
                      rank);
  }
  POSEIDON_RETURN_IF_ERROR(transport::bootstrap::barrier(exit, kBarrier, size, deadline));
  // A rank's last call is a set() the store has answered, so after worker 0 has seen them all,
  // nobody talks to its store any more.
  if (rank != 0) return transport::bootstrap::setString(exit, goneKey(rank), "1");
  for (int r = 1; r < size; ++r) {
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::getString(exit, goneKey(r), deadline).status());
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
