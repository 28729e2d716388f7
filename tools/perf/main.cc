// poseidon-perf: a perftest-style benchmark of Poseidon's transport (see options.h, run.h).
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "tools/perf/options.h"
#include "tools/perf/run.h"

int main(int argc, char** argv) {
  using namespace poseidon::perf;
  // The transport logs to stderr, and only what matters: stdout carries perftest's tables.
  spdlog::set_default_logger(spdlog::stderr_color_mt("poseidon-perf"));
  spdlog::set_level(spdlog::level::warn);

  const ParsedOptions parsed = parseOptions(argc, argv, std::getenv("POSEIDON_SECRET"));
  if (!parsed.options) {
    std::fputs((parsed.message + "\n").c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  const Options& options = *parsed.options;
  if (options.secret.empty()) {
    fmt::print(stderr,
               "poseidon-perf: warning: no secret (--secret or POSEIDON_SECRET): any process that reaches the "
               "data port may join\n");
  }
  try {
    return options.isServer() ? runServer(options) : runClient(options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "poseidon-perf: {}\n", e.what());
    return 1;
  }
}
