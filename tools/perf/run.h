// The two sides of a poseidon-perf run; each returns the process exit code (0, or 1 after a
// failure it has reported on stderr).
#pragma once

#include "tools/perf/options.h"
#include "tools/perf/parameters.h"

namespace poseidon::perf {

// The parameters a client proposes for its command line.
RunParameters clientParameters(const Options& options);

int runClient(const Options& options);
int runServer(const Options& options);

}  // namespace poseidon::perf
