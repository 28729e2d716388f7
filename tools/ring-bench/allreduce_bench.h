// The measurement of poseidon-allreduce-bench: every size of the command line as one layer of one
// ring::RingAllreduce over the job's ranks; per size, `warmup` untimed calls and then the timed
// ones. Before each call every rank fills its buffer with values whose sum over the ranks is
// exact in float; after it checks every element against that sum, so a wrong reduction fails the
// run instead of producing a figure. Only the call (start to completion) is timed, as
// tools/bench-peers times torch.distributed.all_reduce.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "tools/ps/job_process.h"
#include "tools/ring-bench/allreduce_options.h"

namespace poseidon::tools {

struct AllreduceRow {
  uint64_t bytes = 0;
  uint64_t iters = 0;
  double median_us = 0;
  double mean_us = 0;
  double min_us = 0;
  // CPU time per timed call, microseconds (the process clock: every thread, user and kernel,
  // sampled around each call): this rank's, then, in rank 0's rows, the sum over every rank.
  double cpu_us = 0;
  // nccl-tests' definitions: algorithm bandwidth bytes / time; bus bandwidth algbw x 2(P-1)/P,
  // what each link carried.
  double algbw_gbps() const { return median_us > 0 ? static_cast<double>(bytes) * 8e-3 / median_us : 0; }
  double busbw_gbps(int ranks) const { return algbw_gbps() * 2.0 * (ranks - 1) / ranks; }
};

// Runs every size on `process`'s context and store; this rank's timings (every rank's call ends
// within one message of the others'), and on rank 0 the CPU of every rank (through the store).
Result<std::vector<AllreduceRow>> runAllreduceBench(const AllreduceBenchCommandLine& c, JobProcess& process);

}  // namespace poseidon::tools
