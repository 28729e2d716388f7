#include "trainer/api/job_exit.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "transport/bootstrap/store.h"

namespace poseidon::trainer {

namespace {

// What "gone/<rank>" holds: the rank's own last word, or its arrival made by a server.
constexpr const char* kGoneItself = "1";
constexpr const char* kGoneLost = "lost";

std::string arrivedKey(int rank) { return fmt::format("arrived/{}", rank); }
std::string goneKey(int rank) { return fmt::format("gone/{}", rank); }

// Whether this call made `rank`'s arrival (false: somebody did before).
Result<bool> arrive(transport::bootstrap::StoreView& exit, int rank) {
  Result<int64_t> arrivals = exit.add(arrivedKey(rank), 1);
  if (!arrivals) return arrivals.status();
  return *arrivals == 1;
}

}  // namespace

Status leaveJob(transport::bootstrap::StoreView& exit, int rank, int size, std::span<const int> lost_ranks,
                Deadline deadline) {
  for (int lost : lost_ranks) {  // all checked before any is arrived for
    if (lost < 0 || lost >= size || lost == rank) {
      return makeStatus(StatusCode::kInvalidArgument, "rank {} cannot arrive at the exit for rank {} (ranks 0..{})",
                        rank, lost, size - 1);
    }
  }
  for (int lost : lost_ranks) {
    if (lost == 0) continue;  // it serves the store: it arrives itself, or the job ends with it
    auto made = arrive(exit, lost);
    if (!made) return made.status().withContext(fmt::format("arriving at the exit for lost rank {}", lost));
    if (!*made) continue;  // it arrived itself, or another server came for it
    spdlog::warn("rank {} arrived at the job's exit for rank {}, which it went on without", rank, lost);
    // Its last word too: worker 0 does not wait for it.
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::setString(exit, goneKey(lost), kGoneLost));
  }
  auto made = arrive(exit, rank);
  if (!made) return made.status().withContext("arriving at the exit");
  if (!*made) {
    return makeStatus(StatusCode::kUnavailable,
                      "a server ended the job without rank {}: it took the rank for lost (a connection to it broke, "
                      "or the rank said it lost another server) and arrived at the exit in its place",
                      rank);
  }
  for (int r = 0; r < size; ++r) {
    auto arrived = exit.get(arrivedKey(r), deadline);
    if (!arrived) return arrived.status().withContext(fmt::format("rank {} waits at the exit for rank {}", rank, r));
  }
  // A rank's last call is a set() the store has answered, so after worker 0 has seen them all,
  // nobody talks to its store any more.
  if (rank != 0) return transport::bootstrap::setString(exit, goneKey(rank), kGoneItself);
  for (int r = 1; r < size; ++r) {
    POSEIDON_RETURN_IF_ERROR(transport::bootstrap::getString(exit, goneKey(r), deadline)
                                 .status()
                                 .withContext(fmt::format("worker 0 waits at the exit for rank {}'s last word", r)));
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
