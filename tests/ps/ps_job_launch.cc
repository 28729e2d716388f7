#include "tests/ps/ps_job_launch.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "tests/support/timeouts.h"

namespace poseidon::testing {

std::vector<std::unique_ptr<ChildProcess>> launchJob(const std::string& peer_binary, const JobSpec& job,
                                                     const std::string& dir, const std::string& tag) {
  const int size = job.workers + job.servers;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < size; ++rank) {
    std::vector<std::string> argv = job.prefix ? job.prefix(rank) : std::vector<std::string>{};
    const std::string suffix = tag + "-" + std::to_string(rank);
    argv.insert(argv.end(), {peer_binary,
                             job.root.empty() ? "--store" : "--root",
                             job.root.empty() ? dir + "/store-" + tag : job.root,
                             "--rank",
                             std::to_string(rank),
                             "--size",
                             std::to_string(size),
                             "--workers",
                             std::to_string(job.workers),
                             "--role",
                             rank < job.workers ? "worker" : "server",
                             "--consistency",
                             job.consistency,
                             "--optimizer",
                             job.optimizer,
                             "--clocks",
                             std::to_string(job.clocks),
                             "--timeout",
                             "60",
                             "--backend",
                             job.backend});
    if (job.address) argv.insert(argv.end(), {"--address", job.address(rank)});
    if (rank < job.workers) {
      argv.insert(argv.end(),
                  {"--output", dir + "/params-" + suffix, "--clock-delay-ms", std::to_string(job.clock_delay_ms)});
      if (job.trace) argv.insert(argv.end(), {"--trace", dir + "/trace-" + suffix});
      if (rank == job.die_worker) argv.insert(argv.end(), {"--die-at-clock", std::to_string(job.die_at_clock)});
    } else if (!job.checkpoint_dir.empty()) {
      argv.insert(argv.end(),
                  {"--checkpoint-dir", job.checkpoint_dir, "--checkpoint-every", std::to_string(job.checkpoint_every),
                   "--checkpoint-keep", std::to_string(job.checkpoint_keep)});
      if (job.resume) argv.push_back("--resume");
    }
    if (job.edit_argv) job.edit_argv(rank, argv);
    ranks.push_back(std::make_unique<ChildProcess>(argv, dir + "/log-" + suffix));
  }
  return ranks;
}

int waitExit(ChildProcess& process, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + scaled(timeout);
  while (process.running()) {
    if (std::chrono::steady_clock::now() > until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return process.exit_code();
}

std::vector<float> readParams(const std::string& path) {
  const std::string bytes = read_file(path);
  std::vector<float> params(bytes.size() / sizeof(float));
  std::memcpy(params.data(), bytes.data(), params.size() * sizeof(float));
  return params;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  // Empty vectors have no data pointer, which memcmp must not be given.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void setOption(std::vector<std::string>& argv, const std::string& option, const std::string& value) {
  const auto at = std::find(argv.begin(), argv.end(), option);
  if (at != argv.end() && at + 1 != argv.end()) {
    *(at + 1) = value;
  } else {
    argv.insert(argv.end(), {option, value});
  }
}

}  // namespace poseidon::testing
