// The worker role of poseidon-hybcomm-bench: HybridSync over this process's contexts; each
// iteration fills every layer's factors (FC) or gradient (other) with fixed pseudo-random values,
// syncs the layers in backward order timing the whole (wall clock from before the first
// syncLayer() to after the last), then closes the iteration. At the end the workers agree, through
// the store, on the slowest worker's figures (trainer/store_agreement.h) so every worker reports
// the same numbers.
#pragma once

#include "tools/hybcomm/bench_options.h"
#include "tools/hybcomm/bench_process.h"
#include "tools/hybcomm/bench_report.h"

namespace poseidon::tools {

// Fills `report`'s header fields from the command line and the process.
HybBenchReport describeBench(const HybBenchCommandLine& c, const HybridProcess& p);

// Runs the iterations and fills report.iterations, .layers and .choices; ends with finish().
Status runBenchWorker(const HybBenchCommandLine& c, HybridProcess& p, HybBenchReport& report);

}  // namespace poseidon::tools
