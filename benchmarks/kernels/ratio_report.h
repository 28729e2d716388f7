// Runs the registered Google Benchmarks and then prints, for each pair named, the kernel's figure
// against its baseline's from the same run: the medians over --benchmark_repetitions, and the
// best of each side (on a shared machine the best is the run the neighbours disturbed least).
// Repetitions interleaved (--benchmark_enable_random_interleaving=true) expose both sides to the
// same drift.
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
