// JobProcess: one process's place in a parameter-server job, from its options to a connected
// transport context: who it is (launch environment, overridden by --rank/--size/--root), the
// store it rendezvouses through, the device and full-mesh context, and the chunk layout.
//
// Rank 0 serves the TCP store (transport/bootstrap/open_store.h), so it must not exit while
// others still use it: every process ends with leave(), a store barrier after which rank 0
// waits until each other rank has said goodbye.
#pragma once

#include <memory>
#include <string>

#include "ps/chunk_layout.h"
#include "ps/job.h"
#include "tools/ps/job_options.h"
#include "transport/bootstrap/launch_env.h"
#include "transport/bootstrap/store.h"
#include "transport/device.h"

namespace poseidon::tools {

enum class Role { kWorker, kServer };

struct JobProcess {
  transport::bootstrap::LaunchInfo launch;
  ps::PsJob job;
  ps::ChunkLayout layout;
  std::string address;  // where this rank's transport listens
  std::chrono::seconds timeout{kDefaultTimeoutSeconds};
  // The store first, so it goes last: rank 0's serves everyone until the context is gone.
  std::unique_ptr<transport::bootstrap::Store> store;
  std::shared_ptr<transport::Device> device;
  std::shared_ptr<transport::Context> context;

  int rank() const { return launch.rank; }
  Deadline deadline() const { return Deadline::after(timeout); }
  // "worker 1 (rank 1 of 6)" / "server 0 (rank 4 of 6)"
  std::string describe() const;
};

// This host's address on the route to rank 0's store, which other ranks can reach (a wildcard
// would be advertised as is, and is not connectable); the loopback default in a one-rank job or
// one that rendezvouses through a directory.
Result<std::string> addressTowardsStore(const transport::bootstrap::LaunchInfo& launch);

// Who this process is and whether it may play `role`: errors name the rank, the job's layout
// (which ranks are workers, which servers) and where the rank came from.
Result<transport::bootstrap::LaunchInfo> resolveLaunch(const JobOptions& options);
Status checkRole(const transport::bootstrap::LaunchInfo& launch, const ps::PsJob& job, Role role,
                 const char* other_program);

// Resolves the launch, checks the role, builds the layout, opens the store and connects the
// context of all workers + servers ranks.
Result<std::unique_ptr<JobProcess>> joinJob(const JobOptions& options, Role role, const char* other_program);

// The last store traffic of a process: see above.
Status leave(JobProcess& process);

}  // namespace poseidon::tools
