// poseidon-hybcomm-bench's command line: the shared job options of tools/ps (transport, launch,
// secret, timeout, chunk size, the workers' optimizer), the HybComm job's shape and the
// benchmark's own options; and what follows from them: the ranks of each role, the mode as
// HybCommOptions, and the schemes the workers may use (the transport contexts they connect).
//
// Ranks: workers 0..P1-1, PS (summation) servers P1..P1+P2-1, then the Adam servers, which are
// part of the job only when the mode may pick Adam (mode adam, or adaptive with --adam-servers
// >= 1). Every process of a job must be given the same --workers, --ps-servers, --adam-servers,
// --batch, --layers, --mode, --chunk-bytes and adaptive options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "scheme/scheme.h"
#include "tools/cli/cli_fwd.h"
#include "tools/hybcomm/bench_model.h"
#include "tools/ps/job_options.h"
#include "trainer/hybcomm/hybcomm.h"

namespace poseidon::tools {

enum class BenchRole { kWorker, kPsServer, kAdamServer };

inline constexpr const char* kWorkerRole = "worker";
inline constexpr const char* kPsServerRole = "ps-server";
inline constexpr const char* kAdamServerRole = "adam-server";
const char* roleName(BenchRole role);

// The modes, as --mode spells them: four fixed schemes, the closed form and adaptive.
inline constexpr const char* kModeNames[] = {"ps", "sfb", "ring", "adam", "closed", "adaptive"};

inline constexpr uint64_t kMaxBenchIterations = 100'000;
inline constexpr int64_t kMaxBatch = 1 << 20;

// VGG19-22K's fully-connected layers (fc6 4096 x 25088, fc7 4096 x 4096, fc8 21841 x 4096),
// every dimension divided by 4: small enough for a 2-core machine, with fc7 near the break-even
// of SFB and PS at K = 256 (see tools/bench-hybcomm). A model spec (model/spec.h).
inline constexpr const char* kDefaultLayerSpec = "fc:fc6=1024x6272,fc7=1024x1024,fc8=5460x1024";
inline constexpr int64_t kDefaultBatch = 256;

struct HybBenchCommandLine {
  // --workers (P1), --ps-servers (P2, in job.servers), --chunk-bytes, --optimizer (the workers'),
  // the transport and launch options. job.model_spec is set from --layers (the PS's tensors), so
  // the shared checks apply to the model the PS really holds.
  JobOptions job;
  std::string role;  // empty: the rank's role
  int adam_servers = 1;
  // K: --batch when given; otherwise the batch the --layers spec sets (a zoo model's K, or its
  // batch=), or kDefaultBatch when it sets none (a batch of 1).
  int64_t batch = kDefaultBatch;
  std::string layer_spec = kDefaultLayerSpec;
  std::string mode = "closed";
  uint64_t iterations = 10;
  uint64_t warmup = 2;
  int trial_iterations = trainer::HybCommOptions{}.trial_iterations;
  int window = trainer::HybCommOptions{}.window;
  double drift_margin = trainer::HybCommOptions{}.drift_margin;
  std::string json_path;
  int run_timeout_s = 0;  // servers: 0 waits for the workers without limit
  // --event-iteration / --event-command: worker 0 runs the command (sh -c) before that iteration
  // (1-based, warm-up included), e.g. lowering a link with tc to see how each mode copes.
  uint64_t event_iteration = 0;
  std::string event_command;
  BenchLinks links;  // --cost-*: the links the cost model is fed (measured by the caller)
  double model_latency_us = 0;
  std::string slow_worker_direction = "both";

  // Filled by the checks.
  model::Model model;  // --layers, its batch K as above
  trainer::HybCommOptions hybcomm;
  std::vector<scheme::Scheme> schemes;  // those the workers may use: PS first, then in first use

  int workers() const { return job.workers; }
  int psServers() const { return job.servers; }
  bool uses(scheme::Scheme scheme) const;
  // Adam servers in this job: --adam-servers when the mode may pick Adam, else none.
  int adamServersInJob() const { return uses(scheme::Scheme::kAdam) ? adam_servers : 0; }
  int jobSize() const { return workers() + psServers() + adamServersInJob(); }
  BenchRole roleOfRank(int rank) const;
  // "workers on ranks 0..3, PS servers on ranks 4..5, Adam server on rank 6"
  std::string rankLayout() const;
  // "adaptive (PS, SFB, ring, Adam; 2 trial iterations each, window 8, drift margin 0.25)"
  std::string describeMode() const;
};

// Registers the shared options of tools/ps (without --model, --servers and --consistency: the
// layers come from --layers, the PS is a BSP summation service) and the benchmark's own. After
// parsing, a callback parses --layers (model::parseModelSpec) into `model` and job.model_spec (a
// bad spec is a parse error naming it).
void addBenchOptions(CLI::App& app, HybBenchCommandLine& c);

// After checkJobOptions(): the mode, the counts and the role; fills hybcomm and schemes. An error
// names the option, the value and what was expected, or "".
std::string checkBenchOptions(HybBenchCommandLine& c);

}  // namespace poseidon::tools
