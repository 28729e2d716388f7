// The fault suite: what a training job does when a process dies, a link fails or degrades, or a
// worker straggles. A PS job of ps_peer processes (3 workers, 2 servers, BSP unless said), each
// rank on a host of its own: a network namespace with its own link. Each test injects one fault
// and asserts its outcome:
//   - a rank killed (-9): every other rank fails within the deadline naming the dead one, and the
//     job restarted from the servers' last checkpoint ends bit-identical to an uninterrupted run;
//   - a link down and back up within TCP's patience: the job rides through, bit-identical;
//   - a link down for good: the ranks fail within the job's deadline naming the cut-off worker;
//   - loss, delay and reordering (poseidon-linkem): the job completes, bit-identical;
//   - a straggler behind a 10x slower link under SSP: no read older than the bound, and the fast
//     workers run ahead of it up to the bound instead of waiting for it every clock.
// Each prints a "FAULT" line with what it measured (the README's fault table comes from them).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <thread>

#include "ps/checkpoint/checkpoint.h"
#include "tests/ps/ps_job_launch.h"
#include "tests/ps/ssp_trace.h"
#include "tests/ps/synthetic_training.h"
#include "tests/support/mesh.h"
#include "tests/support/netns.h"
#include "tests/support/netns_hosts.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Ranks = std::vector<std::unique_ptr<ChildProcess>>;

constexpr int kWorkers = 3;
constexpr int kServers = 2;
constexpr int kSize = kWorkers + kServers;
// How long the surviving ranks may take to fail after a rank dies: its sockets close at once, so
// this is generous for a loaded 2-core machine.
constexpr auto kDeathNoticed = 20s;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string log(const std::string& dir, const std::string& tag, int rank) {
  return read_file(dir + "/log-" + tag + "-" + std::to_string(rank));
}

JobSpec jobOn(const NetnsHosts& hosts, const std::string& dir) {
  JobSpec job;
  job.workers = kWorkers;
  job.servers = kServers;
  job.clocks = 100;  // 1.6 s of run left after the clock-20 checkpoint, for a starved test to act
  job.checkpoint_dir = dir + "/checkpoints";
  job.checkpoint_every = 10;
  job.checkpoint_keep = 10;  // all: see killAndExpectOthersToName
  job.clock_delay_ms = 20;   // a run long enough to hit mid-way, also on a loaded machine
  job.prefix = [&hosts](int rank) { return hosts.exec(rank); };
  job.address = [&hosts](int rank) { return hosts.address(rank); };
  return job;
}

bool waitForFile(const std::string& path, std::chrono::seconds timeout) {
  const auto until = Clock::now() + timeout;
  struct stat info {};
  while (stat(path.c_str(), &info) != 0) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::vector<float> expectedParams(const JobSpec& job) {
  return referenceTraining(*kernels::parseOptimizer(job.optimizer), job.workers, job.clocks);
}

// Every worker's final parameters are those of an uninterrupted run, bit for bit.
void expectBitIdentical(const JobSpec& job, const std::string& dir, const std::string& tag) {
  const std::vector<float> expected = expectedParams(job);
  for (int w = 0; w < job.workers; ++w) {
    EXPECT_TRUE(sameBits(readParams(dir + "/params-" + tag + "-" + std::to_string(w)), expected)) << "worker " << w;
  }
}

// Every rank's log: a rank that fails often fails for what another one did.
std::string allLogs(const std::string& dir, const std::string& tag, size_t ranks) {
  std::string text;
  for (size_t r = 0; r < ranks; ++r) {
    text += "--- rank " + std::to_string(r) + "\n" + log(dir, tag, static_cast<int>(r));
  }
  return text;
}

void expectAllSucceed(Ranks& ranks, const std::string& dir, const std::string& tag, std::chrono::seconds timeout) {
  for (size_t r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(waitExit(*ranks[r], timeout), 0) << "rank " << r << "\n" << allLogs(dir, tag, ranks.size());
  }
}

// Kills `victim` once every server's checkpoint of clock 20 is complete. Each server writes its
// files behind its clock, at its own pace: with all kept and every server's waited for, the
// restart has clock 20 in common at least (the PS suite's like test, waiting for one server's
// file, once restarted at clock 0 on a loaded machine). Every other rank must then fail within
// kDeathNoticed, and every worker's log name `named`; with `servers_too`, every server's log as
// well (a dead server is known to the others only through the workers that lost it, which say so
// as they leave). Returns the seconds until the last one failed.
double killAndExpectOthersToName(Ranks& ranks, const JobSpec& job, const std::string& dir, int victim,
                                 const std::string& named, bool servers_too = false) {
  for (int server = 0; server < job.servers; ++server) {
    const std::string checkpoint = ps::checkpointPath(job.checkpoint_dir, server, 20);
    EXPECT_TRUE(waitForFile(checkpoint, 60s)) << "no checkpoint " << checkpoint << "\n"
                                              << log(dir, "first", kWorkers + server);
  }
  const auto killed = Clock::now();
  EXPECT_EQ(ranks[static_cast<size_t>(victim)]->stop(SIGKILL), 128 + SIGKILL);
  double last = 0;
  for (int r = 0; r < kSize; ++r) {
    if (r == victim) continue;
    const int code =
        waitExit(*ranks[static_cast<size_t>(r)],
                 std::chrono::duration_cast<std::chrono::milliseconds>(kDeathNoticed - (Clock::now() - killed)));
    last = std::max(last, secondsSince(killed));
    EXPECT_EQ(code, 1) << "rank " << r << " did not fail within " << kDeathNoticed.count() << " s\n"
                       << log(dir, "first", r);
    if (r < kWorkers || servers_too) {
      EXPECT_NE(log(dir, "first", r).find(named), std::string::npos) << "rank " << r << "\n" << log(dir, "first", r);
    }
  }
  for (auto& rank : ranks) rank->stop(SIGKILL);
  EXPECT_FALSE(std::ifstream(dir + "/params-first-0").good()) << "the first run was not interrupted";
  return last;
}

// Restarts the whole job from the servers' last checkpoint: it must resume there, not at clock 0,
// and end bit-identical to an uninterrupted run.
void resumeEndsBitIdentical(JobSpec job, const std::string& dir) {
  job.resume = true;
  job.clock_delay_ms = 0;
  Ranks second = launchJob(PS_PEER_BINARY, job, dir, "second");
  expectAllSucceed(second, dir, "second", 120s);
  EXPECT_EQ(log(dir, "second", 0).find("starts at clock 0"), std::string::npos)
      << "the restart did not resume: " << log(dir, "second", 0);
  expectBitIdentical(job, dir, "second");
}

class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = netnsUnavailableReason()) GTEST_SKIP() << why->c_str();
  }
  std::unique_ptr<NetnsHosts> bridgeHosts(const std::string& subnet, const std::string& rate = "1gbit") {
    auto hosts = NetnsHosts::bridge("flt", subnet, kSize, rate);
    if (!hosts) throw StatusError(hosts.status());
    return std::move(*hosts);
  }
  TempDir dir;
};

TEST_F(Faults, AServerKilledIsNamedAndTheJobResumesBitIdentical) {
  auto hosts = bridgeHosts("10.91.1");
  JobSpec job = jobOn(*hosts, dir.path());
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  const int server1 = kWorkers + 1;
  const double noticed = killAndExpectOthersToName(ranks, job, dir.path(), server1,
                                                   "server 1 (rank " + std::to_string(server1) + ")", true);
  std::cout << "FAULT kill -9 server: every other rank failed naming it within " << noticed << " s\n";
  resumeEndsBitIdentical(job, dir.path());
}

TEST_F(Faults, AWorkerKilledIsNamedAndTheJobResumesBitIdentical) {
  auto hosts = bridgeHosts("10.91.2");
  JobSpec job = jobOn(*hosts, dir.path());
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  const double noticed = killAndExpectOthersToName(ranks, job, dir.path(), 1, "worker 1 (rank 1)");
  std::cout << "FAULT kill -9 worker: every other rank failed naming it within " << noticed << " s\n";
  resumeEndsBitIdentical(job, dir.path());
}

TEST_F(Faults, TheStoresRankKilledIsNamedAndTheJobResumesBitIdentical) {
  auto hosts = bridgeHosts("10.91.3");
  JobSpec job = jobOn(*hosts, dir.path());
  job.root = hosts->address(0) + ":29517";  // rank 0 serves the store: killing it kills the store
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  const double noticed = killAndExpectOthersToName(ranks, job, dir.path(), 0, "rank 0");
  std::cout << "FAULT kill -9 store's rank (rank 0): every other rank failed naming it within " << noticed << " s\n";
  job.root = hosts->address(0) + ":29518";  // a new store for the new run
  resumeEndsBitIdentical(job, dir.path());
}

TEST_F(Faults, ALinkDownAndUpAgainIsRiddenThroughBitIdentical) {
  auto hosts = bridgeHosts("10.91.4");
  JobSpec job = jobOn(*hosts, dir.path());
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  ASSERT_TRUE(waitForFile(ps::checkpointPath(job.checkpoint_dir, 0, 10), 60s)) << log(dir.path(), "first", kWorkers);
  // Server 0's host loses its link for 3 s: TCP retransmits, nothing is lost or repeated.
  const int server0 = kWorkers;
  const auto start = Clock::now();
  ASSERT_TRUE(hosts->setLinkUp(server0, false).isOk());
  std::this_thread::sleep_for(3s);
  ASSERT_TRUE(hosts->setLinkUp(server0, true).isOk());
  expectAllSucceed(ranks, dir.path(), "first", 120s);
  std::cout << "FAULT link down 3 s and up: the job completed " << secondsSince(start)
            << " s after the link went down, bit-identical\n";
  expectBitIdentical(job, dir.path(), "first");
}

TEST_F(Faults, ALinkDownForGoodIsNamedWithinTheDeadline) {
  auto hosts = bridgeHosts("10.91.5");
  JobSpec job = jobOn(*hosts, dir.path());
  constexpr int kDeadlineSeconds = 15;
  // The servers outlast the workers by 5 s, as a job's servers outlast its workers' operations:
  // the workers' waits end first, each asking the servers whom they wait for; then the servers'.
  job.edit_argv = [](int rank, std::vector<std::string>& argv) {
    setOption(argv, "--timeout", std::to_string(rank < kWorkers ? kDeadlineSeconds : kDeadlineSeconds + 5));
  };
  const auto launched = Clock::now();
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  ASSERT_TRUE(waitForFile(ps::checkpointPath(job.checkpoint_dir, 0, 10), 60s)) << log(dir.path(), "first", kWorkers);
  const int cut = 2;  // worker 2's host
  const auto down = Clock::now();
  ASSERT_TRUE(hosts->setLinkUp(cut, false).isOk());
  // Nothing closes a socket: each rank learns it only by its deadline, and must then say who.
  for (int r = 0; r < kSize; ++r) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::seconds(kDeadlineSeconds) +
                                                                            15s - (Clock::now() - launched));
    EXPECT_EQ(waitExit(*ranks[static_cast<size_t>(r)], left), 1) << "rank " << r << "\n" << log(dir.path(), "first", r);
  }
  const double failed = secondsSince(down);
  for (int r = kWorkers; r < kSize; ++r) {
    EXPECT_NE(log(dir.path(), "first", r).find("pulls wait for worker 2"), std::string::npos)
        << "server " << r - kWorkers << " does not name the cut-off worker\n"
        << log(dir.path(), "first", r);
  }
  for (int w = 0; w < kWorkers; ++w) {
    if (w == cut) continue;
    EXPECT_NE(log(dir.path(), "first", w).find("waits for worker 2 (the server's answer now)"), std::string::npos)
        << "worker " << w << " does not name the cut-off worker\n"
        << log(dir.path(), "first", w);
  }
  std::cout << "FAULT link down for good: every rank failed " << failed << " s after (workers' deadline "
            << kDeadlineSeconds << " s from start, servers' 5 s later), the other workers and the servers naming "
            << "worker 2\n";
}

TEST_F(Faults, LossDelayAndReorderingAreRiddenThroughBitIdentical) {
  LinkemSpec link;
  link.binary = POSEIDON_LINKEM_BINARY;
  link.delay_ms = 2;   // per hop: 8 ms round trip host to host
  link.jitter_ms = 2;  // packets overtake each other
  link.loss = 0.01;    // per packet and hop
  link.rate_mbit = 1000;
  auto hosts = NetnsHosts::behindLinkem("flk", "10.92", kSize, link);
  ASSERT_TRUE(hosts) << hosts.status().toString();
  JobSpec job = jobOn(**hosts, dir.path());
  job.clock_delay_ms = 0;
  const auto start = Clock::now();
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  expectAllSucceed(ranks, dir.path(), "first", 240s);
  std::cout << "FAULT loss 1% + delay 2+-2 ms per hop (reordering): the job completed in " << secondsSince(start)
            << " s, bit-identical\n";
  expectBitIdentical(job, dir.path(), "first");
}

TEST_F(Faults, SspRidesThroughAStragglerBehindATenTimesSlowerLink) {
  auto hosts = bridgeHosts("10.91.6", "80mbit");
  const int slow = 2;
  ASSERT_TRUE(hosts->limit(slow, "8mbit").isOk());
  constexpr uint64_t kStaleness = 3;
  JobSpec job = jobOn(*hosts, dir.path());
  job.checkpoint_dir.clear();
  job.clocks = 30;
  job.clock_delay_ms = 0;
  job.consistency = "ssp:" + std::to_string(kStaleness);
  job.trace = true;
  const auto start = Clock::now();
  Ranks ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  expectAllSucceed(ranks, dir.path(), "first", 240s);
  const double took = secondsSince(start);

  const SspCheck check = checkSspTraces(dir.path(), "first", kWorkers, slow, kStaleness);
  EXPECT_TRUE(check.stale_reads.empty()) << check.stale_reads.front();
  ASSERT_EQ(check.slow_pushes, job.clocks);
  EXPECT_LE(check.most_ahead, kStaleness) << "a fast worker ran further ahead than the bound";
  EXPECT_EQ(check.most_ahead, kStaleness) << "the fast workers waited for the straggler instead of running ahead";
  const uint64_t most_ahead = check.most_ahead;
  std::cout << "FAULT straggler behind an 8 mbit link (others 80 mbit), SSP s=" << kStaleness << ": completed in "
            << took << " s, fast workers up to " << most_ahead << " clocks ahead, no read older than the bound\n";
}

}  // namespace
}  // namespace poseidon::testing
