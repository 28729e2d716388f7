// poseidon-timeline-merge: several workers' Chrome trace files (trainer/timeline) into one that
// Perfetto or chrome://tracing opens with every worker as a process.
//
//   poseidon-timeline-merge -o job.json worker-0.json worker-1.json ...
//
// Exit codes: 0 written, 1 an input could not be merged (the reason on stderr), 2 a bad command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/timeline/chrome_trace.h"

int main(int argc, char** argv) {
  CLI::App app{"Merges several workers' Chrome trace files into one trace"};
  std::string output;
  std::vector<std::string> inputs;
  app.add_option("-o,--output", output, "The merged trace to write")->required()->type_name("FILE");
  app.add_option("inputs", inputs, "Trace files, one per worker (distinct pids)")->required()->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;
  }
  const poseidon::Status status = poseidon::trainer::timeline::mergeChromeTraceFiles(inputs, output);
  if (!status.isOk()) {
    fmt::print(stderr, "poseidon-timeline-merge: {}\n", status.toString());
    return 1;
  }
  fmt::print("poseidon-timeline-merge: {} traces into {}\n", inputs.size(), output);
  return 0;
}
