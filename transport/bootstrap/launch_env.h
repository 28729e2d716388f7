// LaunchInfo: who this process is in the job, read from whatever launcher started it.
//
// So an existing cluster launcher starts a job unchanged: plain variables (POSEIDON_RANK,
// POSEIDON_SIZE, POSEIDON_LOCAL_RANK) win, then OpenMPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE/
// LOCAL_RANK), then Slurm's srun (SLURM_PROCID/NTASKS/LOCALID). Every launcher shares the same
// rendezvous variables: POSEIDON_ROOT=host:port of rank 0's store and, optionally,
// POSEIDON_STORE_DIR to rendezvous through a shared directory instead.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/status.h"

namespace poseidon::transport::bootstrap {

inline constexpr const char* kDefaultRootHost = "127.0.0.1";
inline constexpr uint16_t kDefaultRootPort = 29500;

struct LaunchInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;                        // rank among the processes on this host; 0 when the launcher does not say
  std::string root_host = kDefaultRootHost;  // without brackets, also for IPv6
  uint16_t root_port = kDefaultRootPort;
  std::string source;  // which launcher was detected: "poseidon", "openmpi" or "slurm"
  // POSEIDON_STORE_DIR: rendezvous through a FileStore in this shared directory, not TCP.
  std::optional<std::string> file_store_dir;
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// Reads the launch variables through getenv_fn (tests pass a fake environment). Errors name the
// variable, its value and what was expected; when no launcher is found, all three sets of
// variables that were looked for.
Result<LaunchInfo> detectLaunch(const EnvLookup& getenv_fn);
// The same over the process environment.
Result<LaunchInfo> detectLaunch();

}  // namespace poseidon::transport::bootstrap
