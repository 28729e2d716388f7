#include "tools/ps/program.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <exception>

namespace poseidon::tools {

int runProgram(int argc, const char* const* argv, const Program& program) {
  // The library logs warnings and worse to stderr; stdout carries the program's results.
  spdlog::set_default_logger(spdlog::stderr_color_mt(program.name));
  spdlog::set_level(spdlog::level::warn);
  if (auto code = parseCommandLine(*program.app, argc, argv, [&] {
        std::string error = checkJobOptions(*program.job, std::getenv("POSEIDON_SECRET"));
        return error.empty() && program.check ? program.check() : error;
      })) {
    return *code;
  }
  warnIfNoSecret(*program.job, program.name);
  try {
    return program.run();
  } catch (const std::exception& e) {
    // Mostly a model too big for this host's memory.
    fmt::print(stderr, "{}: {}\n", program.name, e.what());
    return 1;
  }
}

int endJob(JobProcess& process, Status status, const char* program) {
  if (status) status = leave(process);
  if (status) return 0;
  fmt::print(stderr, "{}: {}: {}\n", program, process.describe(), status.toString());
  return 1;
}

}  // namespace poseidon::tools
