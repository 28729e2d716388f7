// CheckpointCommits: a worker's view of what every server has done with each checkpoint clock.
//
// Each server tells every worker what became of each checkpoint clock it passed, in clock order:
// written, or skipped, or failed (ps/checkpoint/checkpointer.h). From that a worker knows two
// clocks the servers cannot know alone: the committed one, the newest every server has written a
// file of, and the newest every server has passed, up to which a clock not committed never will
// be. It tells every server both (ToServer::kCheckpointSettled), and the servers remove the files
// no resume needs. Any worker may say it: all hear the same, in the same order per server.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace poseidon::ps {

class CheckpointCommits {
 public:
  // `start_clock`: the clock the job resumed from (every server has it), or 0.
  CheckpointCommits(int servers, uint64_t start_clock);

  struct Heard {
    uint64_t clock = 0;                     // the clock the server passed, widened
    std::optional<uint64_t> committed;      // newly the newest clock every server has written
    std::optional<uint64_t> passed_by_all;  // newly the newest clock every server has passed
  };

  // `server` passed the clock whose low `bits` bits are `low`, after the last it told of, and
  // wrote its file if `written`.
  Heard onOutcome(int server, uint64_t low, uint32_t bits, bool written);

  uint64_t committed() const { return committed_; }
  uint64_t passedByAll() const { return passed_by_all_; }

 private:
  // Written clocks a server told of that nothing settled yet, at most: a server that sends too
  // many (a peer's bug) costs bounded memory. A server holds at most checkpoint_keep of them
  // (at most kMaxCheckpointKeep, checkpoint.h).
  static constexpr size_t kMaxPending = 1024;

  uint64_t committed_;
  uint64_t passed_by_all_;
  std::vector<uint64_t> passed_;             // per server: the newest clock it told of
  std::vector<std::set<uint64_t>> pending_;  // per server: written clocks not settled
};

}  // namespace poseidon::ps
