#include "tests/ps/ssp_trace.h"

#include <algorithm>
#include <sstream>

#include "tests/support/process.h"

namespace poseidon::testing {

std::vector<TraceLine> readTrace(const std::string& path) {
  std::vector<TraceLine> lines;
  std::istringstream in(read_file(path));
  TraceLine line;
  while (in >> line.kind >> line.clock >> line.version >> line.nanos) lines.push_back(line);
  return lines;
}

SspCheck checkSspTraces(const std::string& dir, const std::string& tag, int workers, int slow, uint64_t staleness) {
  const auto path = [&](int w) { return dir + "/trace-" + tag + "-" + std::to_string(w); };
  std::vector<uint64_t> slow_pushes;  // when the slow worker sent each clock's gradient
  for (const TraceLine& line : readTrace(path(slow))) {
    if (line.kind == "push") slow_pushes.push_back(line.nanos);
  }
  SspCheck check;
  check.slow_pushes = slow_pushes.size();
  for (int w = 0; w < workers; ++w) {
    size_t reads = 0;
    for (const TraceLine& line : readTrace(path(w))) {
      if (line.kind != "pull") continue;
      ++reads;
      const uint64_t bound = line.clock > staleness ? line.clock - staleness : 0;
      if (line.version < bound) {
        check.stale_reads.push_back("worker " + std::to_string(w) + " read version " + std::to_string(line.version) +
                                    " at clock " + std::to_string(line.clock));
      }
      if (w == slow) continue;
      const auto pushed = static_cast<uint64_t>(std::lower_bound(slow_pushes.begin(), slow_pushes.end(), line.nanos) -
                                                slow_pushes.begin());
      check.most_ahead = std::max(check.most_ahead, line.clock > pushed ? line.clock - pushed : 0);
    }
    check.reads.push_back(reads);
  }
  return check;
}

}  // namespace poseidon::testing
