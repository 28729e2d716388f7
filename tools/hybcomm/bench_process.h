// HybridProcess: one process's place in a HybComm benchmark job, from its options to connected
// transport contexts. One device; one context per scheme, each with its own ranks (HybridSync's
// contract, trainer/hybrid_sync.h):
//   PS    workers + PS servers     (ranks 0..P1+P2-1, as the job's ranks)
//   SFB   workers                  (the workers' ranks)
//   ring  workers                  (the workers' ranks)
//   Adam  workers + Adam servers   (Adam server a is rank P1 + a there, rank P1 + P2 + a in the job)
// A worker connects the contexts of the schemes its mode may use, in that order; a PS server only
// the PS context, an Adam server only the Adam context.
//
// The store, the launch and the last goodbye are tools/ps's (job_process.h): rank 0 serves the
// store and every process ends with leave().
#pragma once

#include <memory>
#include <string>

#include "tools/hybcomm/bench_options.h"
#include "tools/ps/job_process.h"
#include "trainer/sync/hybrid_sync.h"

namespace poseidon::tools {

struct HybridProcess {
  // The launch, the PS job (P1, P2, name), the listen address, the store, the device, and in
  // `context` the PS context (null on an Adam server). Declared first, so it goes last.
  JobProcess base;
  BenchRole role = BenchRole::kWorker;
  std::shared_ptr<transport::Context> sfb;
  std::shared_ptr<transport::Context> ring;
  std::shared_ptr<transport::Context> adam;

  int rank() const { return base.launch.rank; }
  Deadline deadline() const { return base.deadline(); }
  trainer::HybridContexts contexts() const { return {base.context.get(), sfb.get(), ring.get(), adam.get()}; }
  // "worker 1 (rank 1 of 7)" / "PS server 0 (rank 4 of 7)" / "Adam server 0 (rank 6 of 7)"
  std::string describe() const;
};

// Resolves the launch (as tools/ps does), checks the job's size and the role against the rank,
// opens the store, creates the device and connects this role's contexts.
Result<std::unique_ptr<HybridProcess>> joinHybridJob(const HybBenchCommandLine& c);

// leave() when `status` is OK; 0, or 1 after printing the failure, naming the process, on stderr.
int endHybridJob(HybridProcess& process, Status status, const char* program);

}  // namespace poseidon::tools
