// What poseidon-server and poseidon-ps-bench do around their own work: log to stderr (stdout
// carries their results), parse the command line (exit 2 on a bad one), warn without a secret,
// turn an exception into exit 1; and at the end, leave the job and report a failure naming the
// process.
#pragma once

#include <functional>
#include <string>

#include "tools/cli/cli_fwd.h"
#include "tools/ps/job_options.h"
#include "tools/ps/job_process.h"

namespace poseidon::tools {

struct Program {
  const char* name;
  CLI::App* app;  // with the job's options and the program's own added
  JobOptions* job;
  std::function<std::string()> check;  // the program's own checks after the job's; may be empty
  std::function<int()> run;            // the exit code
};

int runProgram(int argc, const char* const* argv, const Program& program);

// leave() when `status` is OK; 0, or 1 after printing the failure on stderr.
int endJob(JobProcess& process, Status status, const char* program);

}  // namespace poseidon::tools
