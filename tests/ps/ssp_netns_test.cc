// SSP with one worker behind a slow link: the servers and two fast workers share one network
// namespace, the third worker sits in another behind a tbf-limited veth. Every worker's trace
// shows it never read parameters older than the bound (version >= clock - s), and comparing
// the fast workers' reads with the slow worker's pushes (CLOCK_MONOTONIC is one clock across
// namespaces) shows they ran ahead by at most s clocks, and did reach s: the bound was exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "tests/ps/ps_job_launch.h"
#include "tests/support/mesh.h"
#include "tests/support/netns.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;

struct TraceLine {
  std::string kind;  // "push" or "pull"
  uint64_t clock = 0;
  uint64_t version = 0;
  uint64_t nanos = 0;
};

std::vector<TraceLine> readTrace(const std::string& path) {
  std::vector<TraceLine> lines;
  std::istringstream in(read_file(path));
  TraceLine line;
  while (in >> line.kind >> line.clock >> line.version >> line.nanos) lines.push_back(line);
  return lines;
}

TEST(PsSspNetns, SlowWorkerBoundsTheFastOnesAndNoReadIsStalerThanTheBound) {
  if (auto why = netnsUnavailableReason()) GTEST_SKIP() << why->c_str();
  auto hosts = NetnsPair::create("pssp", "10.77.31");
  ASSERT_TRUE(hosts) << hosts.status().toString();
  NetnsPair& pair = **hosts;
  ASSERT_TRUE(pair.limitRate("8mbit").isOk());

  constexpr int kStaleness = 3;
  constexpr int kSlow = 2;
  TempDir dir;
  JobSpec job;
  job.workers = 3;
  job.servers = 2;
  job.clocks = 30;
  job.consistency = "ssp:" + std::to_string(kStaleness);
  job.trace = true;
  job.prefix = [&](int rank) {
    return std::vector<std::string>{"ip", "netns", "exec", rank == kSlow ? pair.nsB() : pair.nsA()};
  };
  job.address = [&](int rank) { return rank == kSlow ? pair.addrB() : pair.addrA(); };
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "ssp");
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(waitExit(*ranks[r], 120s), 0) << "rank " << r << "\n"
                                            << read_file(dir.path() + "/log-ssp-" + std::to_string(r));
  }

  std::vector<uint64_t> slow_pushes;  // when the slow worker sent each clock's gradient
  for (const TraceLine& line : readTrace(dir.path() + "/trace-ssp-" + std::to_string(kSlow))) {
    if (line.kind == "push") slow_pushes.push_back(line.nanos);
  }
  ASSERT_EQ(slow_pushes.size(), job.clocks);
  uint64_t most_ahead = 0;
  for (int w = 0; w < job.workers; ++w) {
    const auto trace = readTrace(dir.path() + "/trace-ssp-" + std::to_string(w));
    size_t reads = 0;
    for (const TraceLine& line : trace) {
      if (line.kind != "pull") continue;
      ++reads;
      const uint64_t bound = line.clock > kStaleness ? line.clock - kStaleness : 0;
      EXPECT_GE(line.version, bound) << "worker " << w << " read version " << line.version << " at clock "
                                     << line.clock;
      if (w == kSlow) continue;
      const auto pushed = static_cast<uint64_t>(std::lower_bound(slow_pushes.begin(), slow_pushes.end(), line.nanos) -
                                                slow_pushes.begin());
      const uint64_t ahead = line.clock > pushed ? line.clock - pushed : 0;
      EXPECT_LE(ahead, static_cast<uint64_t>(kStaleness))
          << "worker " << w << " read for clock " << line.clock << " when the slow worker had pushed " << pushed;
      most_ahead = std::max(most_ahead, ahead);
    }
    EXPECT_EQ(reads, job.clocks + 1) << "worker " << w;
  }
  EXPECT_EQ(most_ahead, static_cast<uint64_t>(kStaleness)) << "the fast workers never reached the bound";
}

}  // namespace
}  // namespace poseidon::testing
