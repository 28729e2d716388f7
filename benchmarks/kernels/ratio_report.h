// Runs the registered Google Benchmarks and then prints, for each pair named, the kernel's figure
// against its baseline's from the same run: "ratio  sf exact kp=256 / sgemm: 92.1 / 101.3 GFLOP/s
// = 0.91 (target >= 0.8)". With --benchmark_repetitions the medians are compared.
#pragma once

#include <string>
#include <vector>

namespace poseidon::bench {

struct Ratio {
  std::string kernel;    // a registered benchmark's name
  std::string baseline;  // the benchmark it is compared with
  std::string counter;   // the user counter compared, e.g. "bytes/s" or "FLOP/s" (rates)
  double target = 0;     // printed as "target >= ..."; 0: none
};

// Initialises Google Benchmark from the command line, runs, prints the usual table and then the
// ratios. Returns the process exit code (1 on a bad flag).
int runWithRatios(int argc, char** argv, const std::vector<Ratio>& ratios);

}  // namespace poseidon::bench
