#include "trainer/api/server_checkpoint_options.h"

#include <fmt/format.h>

#include "ps/checkpoint/checkpoint.h"

namespace poseidon::trainer {

Status validateServerCheckpoints(const ServerCheckpointOptions& options, const ps::Consistency& consistency) {
  if (options.dir.empty()) {
    if (options.every != 0 || options.resume) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "SessionOptions::server_checkpoints has {} but no dir: set dir, where the servers and the "
                        "workers write their checkpoints",
                        options.resume ? "resume" : fmt::format("every {}", options.every));
    }
    return Status::ok();
  }
  if (consistency.mode == ps::Consistency::Mode::kBsp) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SessionOptions::server_checkpoints.dir '{}' under consistency bsp: the workers hold the "
                      "weights and the optimizer state there, and Session::saveCheckpoint writes them all; leave "
                      "server_checkpoints empty",
                      options.dir);
  }
  if (options.every == 0 && !options.resume) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "SessionOptions::server_checkpoints.every is 0 and resume is off, so dir '{}' is never used; "
                      "expected the clocks (iterations) between checkpoints, >= 1",
                      options.dir);
  }
  if (consistency.mode == ps::Consistency::Mode::kAsync && consistency.n_push > 1) {
    // The servers count pushes, one per n_push iterations, and a worker's gradient summed since
    // its last push is in no checkpoint: clocks and iterations would not match.
    return makeStatus(StatusCode::kInvalidArgument,
                      "SessionOptions::server_checkpoints under consistency {}: checkpoints need n_push 1 (the "
                      "servers count one clock per push, and the gradient a worker sums between pushes is in no "
                      "checkpoint)",
                      consistency.canonical());
  }
  if (options.keep < 1 || options.keep > ps::kMaxCheckpointKeep) {
    return makeStatus(StatusCode::kInvalidArgument, "SessionOptions::server_checkpoints.keep is {}; expected 1 to {}",
                      options.keep, ps::kMaxCheckpointKeep);
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
