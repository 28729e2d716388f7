// CheckpointCommits: a worker's view of which checkpoint clock every server has written.
//
// Each server tells every worker of each checkpoint file it completes; the newest clock all
// servers have told of is committed, and the worker says so to every server, which may then
// remove older files (ps/checkpoint/checkpointer.h). Any worker may say it: all hear the same.
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

  // `server` wrote its checkpoint of the clock whose low bits are `low` (its files come in
  // ascending clocks). Returns the clock every server has now written, when that is newer than
  // the last one returned.
  std::optional<uint64_t> onWritten(int server, uint32_t low);

  uint64_t committed() const { return committed_; }

 private:
  // Clocks a server wrote that no commit has passed, at most: a server that sends too many (a
  // peer's bug) costs bounded memory. A server holds at most checkpoint_keep of them.
  static constexpr size_t kMaxPending = 1024;

  uint64_t committed_;
  std::vector<uint64_t> newest_;             // per server: its newest clock told
  std::vector<std::set<uint64_t>> pending_;  // per server: written clocks newer than committed_
};

}  // namespace poseidon::ps
