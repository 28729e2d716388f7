// poseidon-server: the server role of a parameter-server job. Starts ps::Server on this rank,
// serves the workers until each has said goodbye and prints one JSON line of statistics.
//
// Exit codes: 0 done, 1 the job failed (the reason on stderr), 2 a bad command line.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "ps/checkpoint/durable_file.h"
#include "ps/server.h"
#include "tools/cli/readable_range.h"
#include "tools/ps/job_options.h"
#include "tools/ps/job_process.h"
#include "tools/ps/program.h"

namespace poseidon::tools {
namespace {

constexpr const char* kProgram = "poseidon-server";

struct ServerCommandLine {
  JobOptions job;
  std::string checkpoint_dir;
  uint64_t checkpoint_every = 0;
  int checkpoint_keep = ps::ServerOptions{}.checkpoint_keep;
  bool resume = false;
  bool resume_if_present = false;
  bool no_average = false;
  int run_timeout_s = 0;
};

void addServerOptions(CLI::App& app, ServerCommandLine& c) {
  app.add_option("--checkpoint-dir", c.checkpoint_dir, "Write checkpoints into DIR (default: none)")->type_name("DIR");
  app.add_option("--checkpoint-every", c.checkpoint_every, "Checkpoint every N clocks (default 0: only on request)")
      ->type_name("N");
  app.add_option("--checkpoint-keep", c.checkpoint_keep,
                 "Keep the newest N checkpoints every server has written, and at most N later ones that wait "
                 "for the other servers (default 2)")
      ->type_name("N")
      ->check(readableRange(1, ps::kMaxCheckpointKeep));
  auto* resume = app.add_flag("--resume", c.resume,
                              "Continue from the newest checkpoint every server of the job has; --checkpoint-dir "
                              "must exist");
  app.add_flag("--resume-if-present", c.resume_if_present,
               "As --resume when --checkpoint-dir exists, else start from clock 0 (for a job script that runs "
               "the first time and after each restart alike)")
      ->excludes(resume);
  app.add_flag("--no-average", c.no_average, "Apply the sum of the workers' gradients, not their mean");
  app.add_option("--run-timeout", c.run_timeout_s,
                 "Give up when the workers are not all done after this many seconds (default 0: no limit)")
      ->type_name("SECONDS")
      ->check(readableRange(0, std::numeric_limits<int>::max()));
}

std::string checkServerOptions(ServerCommandLine& c) {
  const bool resuming = c.resume || c.resume_if_present;
  if ((c.checkpoint_every > 0 || resuming) && c.checkpoint_dir.empty()) {
    return fmt::format("{} needs --checkpoint-dir", c.resume              ? "--resume"
                                                    : c.resume_if_present ? "--resume-if-present"
                                                                          : "--checkpoint-every");
  }
  if (c.checkpoint_dir.empty()) return {};
  std::error_code error;
  const bool exists = std::filesystem::is_directory(c.checkpoint_dir, error);
  if (c.resume && !exists) {
    return fmt::format(
        "--resume: --checkpoint-dir '{}' is not a directory, so there is nothing to resume from (a mistyped path?); "
        "--resume-if-present starts from clock 0 when it is missing",
        c.checkpoint_dir);
  }
  // Checked now, not at the first checkpoint an hour into the run.
  Status writable = ps::checkWritableDirectory(c.checkpoint_dir);
  if (!writable) return fmt::format("--checkpoint-dir: {}", writable.message());
  c.resume = resuming;
  return {};
}

int run(const ServerCommandLine& c) {
  auto process = joinJob(c.job, Role::kServer, "poseidon-ps-bench or your trainer's worker");
  if (!process) {
    fmt::print(stderr, "{}: {}\n", kProgram, process.status().toString());
    return 1;
  }
  JobProcess& p = **process;
  ps::ServerOptions options;
  options.optimizer = c.job.optimizer;
  options.consistency = c.job.consistency;
  options.average = !c.no_average;
  options.checkpoint_dir = c.checkpoint_dir;
  options.checkpoint_every = c.checkpoint_every;
  options.checkpoint_keep = c.checkpoint_keep;
  options.resume = c.resume;
  auto server = ps::Server::start(*p.context, *p.store, c.job.model, p.layout, p.job, options, p.deadline());
  if (!server) {
    fmt::print(stderr, "{}: {}: {}\n", kProgram, p.describe(), server.status().toString());
    return 1;
  }
  const auto started = std::chrono::steady_clock::now();
  const Deadline until =
      c.run_timeout_s > 0 ? Deadline::after(std::chrono::seconds(c.run_timeout_s)) : Deadline::never();
  Status status = (*server)->waitUntilDone(until);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const ps::ServerStats stats = (*server)->stats();
  const nlohmann::json line = {
      {"server", p.rank() - p.job.workers},         {"rank", p.rank()},         {"bytes_pushed", stats.bytes_pushed},
      {"bytes_pulled", stats.bytes_pulled},         {"updates", stats.updates}, {"seconds", seconds},
      {"resumed_clock", (*server)->resumedClock()}, {"ok", status.isOk()}};
  fmt::print("{}\n", line.dump());
  std::fflush(stdout);
  return endJob(p, status, kProgram);
}

}  // namespace
}  // namespace poseidon::tools

int main(int argc, char** argv) {
  using namespace poseidon::tools;
  CLI::App app{
      "poseidon-server: the server role of a parameter-server job (one shard of the model).\n"
      "Ranks 0..P1-1 are workers, P1..P1+P2-1 servers; rank 0 serves the rendezvous store.\n"
      "Prints one JSON line of statistics when every worker is done. Exit: 0 ok, 1 failure, 2 bad usage.",
      kProgram};
  ServerCommandLine c;
  addJobOptions(app, c.job);
  addServerOptions(app, c);
  return runProgram(argc, argv,
                    {kProgram, &app, &c.job, [&] { return checkServerOptions(c); }, [&] { return run(c); }});
}
