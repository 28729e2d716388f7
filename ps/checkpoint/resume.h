// Resume: which clock a restarted job continues from.
//
// A job is resumable at clock T only when every server has a complete checkpoint of T (a server
// killed while writing T + 1 still has T). Each server publishes the clocks it has, each worker
// the clocks it can resume from (below); servers and workers alike take the newest clock common
// to all: 0 (start fresh) when no server has any, and kInvalidArgument naming what each has when
// some servers have checkpoints but no clock is common to all of them and every worker with
// state of its own (a fresh start would quietly drop them).
//
// A server started fresh (not resuming) in a directory that already holds its checkpoints fails
// the job too, naming the directory and the clocks: the new run's files would sit beside the
// earlier run's, and a later resume could take a clock of the old run that every server still
// has, or pair one server's old file with another's new one of the same clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ps/job.h"
#include "transport/bootstrap/store.h"

namespace poseidon::ps {

// What a server holds at start: the clocks of its complete checkpoints in `dir` (empty, and `dir`
// empty, when it writes none) and whether it was told to resume from them.
struct HeldCheckpoints {
  bool resume = false;
  std::vector<uint64_t> clocks;
  std::string dir;
};

Status publishCheckpointClocks(transport::bootstrap::Store& store, const PsJob& job, int server,
                               const HeldCheckpoints& held);

// What a worker can resume from: any clock (nullopt: it keeps no state of its own), or only the
// clocks listed.
Status publishWorkerResumeClocks(transport::bootstrap::Store& store, const PsJob& job, int worker,
                                 const std::optional<std::vector<uint64_t>>& clocks);

// Every server and every worker must have published (ps::Server and ps::Client do at start).
Result<uint64_t> agreeResumeClock(transport::bootstrap::Store& store, const PsJob& job, Deadline deadline);

// A comma-separated list of clocks another rank published under `key` ("" for none), sorted;
// kProtocolError naming the key and the value when an item is not a clock. The BSP workers'
// agreement on their checkpoints (trainer/api/session.cc) publishes its lists so too.
Result<std::vector<uint64_t>> parseClockList(const std::string& key, std::string_view value);

}  // namespace poseidon::ps
