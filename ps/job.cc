#include "ps/job.h"

#include "ps/imm_code.h"

namespace poseidon::ps {

Status PsJob::validate(const transport::Context& context) const {
  if (workers < 1 || servers < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "a PS job needs >= 1 worker and >= 1 server, got {} and {}",
                      workers, servers);
  }
  if (static_cast<uint64_t>(workers) > kMaxWorkers) {
    return makeStatus(StatusCode::kInvalidArgument, "{} workers exceed the protocol's {}", workers, kMaxWorkers);
  }
  if (context.size() != workers + servers) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "context '{}' has {} ranks but the PS job has {} workers + {} servers", context.name(),
                      context.size(), workers, servers);
  }
  return Status::ok();
}

}  // namespace poseidon::ps
