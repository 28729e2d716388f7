// The command-line options every process of a parameter-server job shares (poseidon-server,
// poseidon-ps-bench): the model, the job's layout, the consistency model and optimizer, the
// transport, the secret and where the launch environment is overridden.
//
// Every process of a job must be given the same model, --workers/--servers, --chunk-bytes and
// --consistency: each computes the chunk layout on its own (ps/chunk_layout.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/optimizer_config.h"
#include "model/model.h"
#include "ps/chunk_layout.h"
#include "ps/consistency.h"
#include "tools/cli/cli_fwd.h"

namespace poseidon::tools {

inline constexpr int kDefaultTimeoutSeconds = 60;
inline constexpr int kMaxTimeoutSeconds = 86400;
inline constexpr int kMaxStreams = 64;  // DeviceOptions::validate's bound
// A chunk is one one-sided write; the transport refuses frames over 64 MiB by default.
inline constexpr uint64_t kMaxChunkBytes = uint64_t{64} << 20;

struct JobOptions {
  std::string model_spec;  // model/spec.h
  int workers = 0;         // 0: the job's size minus --servers
  int servers = 1;
  uint64_t chunk_bytes = ps::kDefaultChunkBytes;
  std::string consistency_spec = "bsp";
  std::string optimizer_spec = "sgd";
  std::string backend = "tcp";
  std::string address;  // empty: this host's address on the route to rank 0's store
  int streams = 1;
  std::string progress = "waiters";  // DeviceOptions::waiters_drive: "waiters" or "engine"
  std::string secret;                // --secret, else POSEIDON_SECRET
  int timeout_s = kDefaultTimeoutSeconds;
  int rank = -1;  // >= 0: overrides the launch environment (with --size)
  int size = -1;
  std::string root;  // host:port of rank 0's store; empty: POSEIDON_ROOT
  std::string job_name = "ps";

  // Filled by checkJobOptions() from the specs above.
  model::Model model;
  uint64_t model_bytes = 0;
  ps::Consistency consistency;
  kernels::OptimizerConfig optimizer;
};

// Registers the shared options on `app`, writing into `options`.
void addJobOptions(CLI::App& app, JobOptions& options);

// After app.parse(): parses the model, consistency and optimizer specs and checks the values
// that CLI11 cannot (chunk size, --rank with --size). Returns an error naming the option, the
// value and what was expected, or an empty string. `environment_secret` is POSEIDON_SECRET.
std::string checkJobOptions(JobOptions& options, const char* environment_secret);

// Warns on stderr when the job has no secret: anyone reaching a data port could join it.
void warnIfNoSecret(const JobOptions& options, const char* program);

// What a program does after parsing its command line: go on (nullopt), or exit with the code
// (0 after --help, 2 after a bad command line) once the help or the error has been printed.
// `check` runs after CLI11's own parsing and returns an error text or "".
std::optional<int> parseCommandLine(CLI::App& app, int argc, const char* const* argv,
                                    const std::function<std::string()>& check);

// The same for a program whose source does not include CLI11 (cli_fwd.h says why): builds the
// App from `program` (its name) and `description` (--help's first lines), and `add_options`
// declares the options on it.
std::optional<int> parseCommandLine(const char* program, const std::string& description, int argc,
                                    const char* const* argv, const std::function<void(CLI::App&)>& add_options,
                                    const std::function<std::string()>& check);

}  // namespace poseidon::tools
