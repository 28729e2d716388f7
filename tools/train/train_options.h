// poseidon-train's command line: the job's shape (--workers, --ps-servers, --adam-servers), the
// training run (--batch, --epochs, --optimizer, --hybcomm, --merge, --priority, --consistency,
// --seed, --data-dir, --max-steps), the transport (--backend, --address, --secret, --timeout), the
// outputs (--out) and checkpoints. Every rank of a job is given the same options; the rank itself
// comes from the launch environment (POSEIDON_RANK / POSEIDON_SIZE / POSEIDON_ROOT, mpirun, srun).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "kernels/optimizer_config.h"
#include "ps/consistency.h"
#include "tools/cli/cli_fwd.h"
#include "trainer/api/session.h"
#include "trainer/wfbp/merge_options.h"
#include "transport/bootstrap/launch_env.h"

namespace poseidon::tools {

// The default step: SGD with momentum whose learning rate falls along a cosine to 0 over the run
// (max_steps = --epochs x the steps of an epoch is appended). Measured at the global batch of 64
// in 3 epochs: the constant rate (sgd:lr=0.05,momentum=0.9) ended at 90.5 % test accuracy with
// 4 x 16 but 89.9 % with 1 x 64; the decay gains its margin in the last epoch.
inline constexpr const char* kDefaultTrainOptimizer = "sgd:lr=0.05,momentum=0.9,schedule=cosine";
// Under SSP with a staleness bound and async: stale gradients act as extra momentum. At the rate
// above, async training of 3 workers x 16 (2 PS servers, 400 steps, all on 2 cores) collapsed to
// chance (10 % test accuracy) in 2 of 8 runs and reached 72-81 % in the others; at 0.02 all 8
// reached 83.3-84.8 % (the cosine over the 3 epochs' steps, alternating runs of the two).
inline constexpr const char* kDefaultStaleTrainOptimizer = "sgd:lr=0.02,momentum=0.9,schedule=cosine";
inline constexpr const char* kHybCommModes[] = {"closed", "adaptive", "ps", "sfb", "ring"};

struct TrainCommandLine {
  int workers = 4;
  int ps_servers = 2;
  int adam_servers = 0;
  uint32_t batch = 16;  // K per worker
  uint32_t epochs = 3;
  // Empty: kDefaultTrainOptimizer (stale gradients: kDefaultStaleTrainOptimizer) over the run's steps.
  std::string optimizer_spec;
  std::string hybcomm = "closed";
  std::string merge = "off";             // MG-WFBP: off, planned (profiled here, probed at start-up), fixed:<groups>
  std::string consistency_spec = "bsp";  // ps::parseConsistency's spelling
  bool priority = true;                  // SessionOptions::push.priority
  uint64_t seed = 1;
  std::string data_dir;  // empty: trainer::data::fashionMnistDir()
  std::string out_dir = "train-out";
  std::string backend = "tcp";
  std::string address;  // empty: this host's address on the route to rank 0's store
  std::string secret;   // --secret, else POSEIDON_SECRET
  int timeout_s = 60;
  int blas_threads = 1;
  uint64_t max_steps = 0;          // 0: every step of every epoch
  uint64_t timeline_steps = 1000;  // iterations the timeline records (0: none)
  std::string checkpoint_dir;
  uint64_t checkpoint_every = 0;  // 0: never
  bool resume = false;

  // Filled by checkTrainOptions().
  kernels::OptimizerConfig optimizer;
  trainer::HybCommOptions hybcomm_options;
  trainer::MergeOptions merge_options;  // planned: the backward times are added by the worker's profile
  ps::Consistency consistency;

  trainer::JobLayout layout() const { return {workers, ps_servers, adam_servers}; }
  uint64_t globalBatch() const { return uint64_t{batch} * static_cast<uint64_t>(workers); }
};

void addTrainOptions(CLI::App& app, TrainCommandLine& c);

// After CLI11's parsing: the specs, the combinations and the data directory. An error names the
// option, the value and what was expected; "" when all is well. `environment_secret` is
// POSEIDON_SECRET (may be null).
std::string checkTrainOptions(TrainCommandLine& c, const char* environment_secret);

// The launch's size against the layout: "" or an error naming both.
std::string checkLaunchFitsLayout(const TrainCommandLine& c, const transport::bootstrap::LaunchInfo& launch);

// What every rank passes to Session::join; `address` is where this rank's transport listens.
trainer::SessionOptions sessionOptions(const TrainCommandLine& c, const std::string& address);

// --address, else this host's address on the route to rank 0's store (which peers can reach).
Result<std::string> listenAddress(const TrainCommandLine& c, const transport::bootstrap::LaunchInfo& launch);

}  // namespace poseidon::tools
