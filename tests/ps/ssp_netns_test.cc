// SSP with one worker behind a slow link: the servers and two fast workers share one network
// namespace, the third worker sits in another behind a tbf-limited veth. Every worker's trace
// shows it never read parameters older than the bound (version >= clock - s), and comparing
// the fast workers' reads with the slow worker's pushes (CLOCK_MONOTONIC is one clock across
// namespaces) shows they ran ahead by at most s clocks, and did reach s: the bound was exercised.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "tests/ps/ps_job_launch.h"
#include "tests/ps/ssp_trace.h"
#include "tests/support/mesh.h"
#include "tests/support/netns.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;

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

  const SspCheck check = checkSspTraces(dir.path(), "ssp", job.workers, kSlow, kStaleness);
  EXPECT_TRUE(check.stale_reads.empty()) << check.stale_reads.front();
  EXPECT_EQ(check.slow_pushes, job.clocks);
  for (int w = 0; w < job.workers; ++w)
    EXPECT_EQ(check.reads[static_cast<size_t>(w)], job.clocks + 1) << "worker " << w;
  EXPECT_LE(check.most_ahead, static_cast<uint64_t>(kStaleness)) << "a fast worker ran further ahead than the bound";
  EXPECT_EQ(check.most_ahead, static_cast<uint64_t>(kStaleness)) << "the fast workers never reached the bound";
}

}  // namespace
}  // namespace poseidon::testing
