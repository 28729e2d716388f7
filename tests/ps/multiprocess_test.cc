// The parameter server across processes: a server killed with SIGKILL and restarted from its
// checkpoint ends bit-identical to an uninterrupted run; a worker killed under BSP makes the
// others fail promptly naming it, and under async they go on.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ps/checkpoint/checkpoint.h"
#include "tests/ps/ps_job_launch.h"
#include "tests/ps/synthetic_training.h"
#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "tests/support/rdma.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;

// Every case runs over each backend: tcp on loopback, verbs on the RDMA netdev the environment
// names (tools/softroce-vm runs them on Soft-RoCE), skipping where there is none.
class PsMultiprocess : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "verbs" && rdmaTestAddress().empty()) GTEST_SKIP() << kNoRdmaDevice;
  }
  JobSpec spec() const {
    JobSpec job;
    job.backend = GetParam();
    const std::string address = GetParam() == "verbs" ? rdmaTestAddress() : "127.0.0.1";
    job.address = [address](int) { return address; };
    return job;
  }
};

TEST_P(PsMultiprocess, ServerKilledAndRestartedFromCheckpointEndsBitIdentical) {
  TempDir dir;
  JobSpec job = spec();
  job.clocks = 80;
  job.checkpoint_dir = dir.path() + "/checkpoints";
  job.checkpoint_every = 10;
  // Each server writes its files behind its clock, at its own pace. With every checkpoint kept and
  // both servers' clock-20 files waited for, the restart has a clock in common to resume from.
  // (Waiting for server 1's file alone, with 2 kept, a loaded run once restarted at clock 0.)
  job.checkpoint_keep = 8;
  job.clock_delay_ms = 20;  // long enough to kill the server mid-run, also on a loaded machine
  auto first = launchJob(PS_PEER_BINARY, job, dir.path(), "first");
  // Kill server 1 (rank 3) with SIGKILL once both servers' checkpoints of clock 20 are complete.
  const auto until = std::chrono::steady_clock::now() + 60s;
  for (int server : {0, 1}) {
    const std::string checkpoint = ps::checkpointPath(job.checkpoint_dir, server, 20);
    struct stat info {};
    while (stat(checkpoint.c_str(), &info) != 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(5ms);
    ASSERT_EQ(stat(checkpoint.c_str(), &info), 0)
        << "no checkpoint " << checkpoint << "\n"
        << read_file(dir.path() + "/log-first-" + std::to_string(job.workers + server));
  }
  EXPECT_EQ(first[3]->stop(SIGKILL), 128 + SIGKILL);
  // The workers notice and fail, naming the server.
  for (int w = 0; w < job.workers; ++w) {
    EXPECT_EQ(waitExit(*first[static_cast<size_t>(w)], 20s), 1);
    EXPECT_NE(read_file(dir.path() + "/log-first-" + std::to_string(w)).find("server 1 (rank 3)"), std::string::npos)
        << read_file(dir.path() + "/log-first-" + std::to_string(w));
  }
  for (auto& rank : first) rank->stop(SIGKILL);
  ASSERT_FALSE(std::ifstream(dir.path() + "/params-first-0").good()) << "the first run was not interrupted";

  job.resume = true;
  job.clock_delay_ms = 0;
  auto second = launchJob(PS_PEER_BINARY, job, dir.path(), "second");
  // Every rank's exit before any verdict, and every log with a failure: one rank's error is often
  // another's doing (a worker names the server that closed on it; the server says why).
  std::vector<int> exits;
  for (auto& rank : second) exits.push_back(waitExit(*rank, 60s));
  std::string logs;
  for (size_t r = 0; r < second.size(); ++r) {
    logs += "rank " + std::to_string(r) + " exited " + std::to_string(exits[r]) + ":\n" +
            read_file(dir.path() + "/log-second-" + std::to_string(r));
  }
  ASSERT_EQ(exits, std::vector<int>(second.size(), 0)) << logs;
  const std::string log = read_file(dir.path() + "/log-second-0");
  EXPECT_EQ(log.find("starts at clock 0"), std::string::npos) << "the restart did not resume: " << log;
  kernels::OptimizerConfig optimizer = *kernels::parseOptimizer(job.optimizer);
  const std::vector<float> expected = referenceTraining(optimizer, job.workers, job.clocks);
  for (int w = 0; w < job.workers; ++w) {
    EXPECT_TRUE(sameBits(readParams(dir.path() + "/params-second-" + std::to_string(w)), expected)) << "worker " << w;
  }
}

TEST_P(PsMultiprocess, WorkerKilledUnderBspFailsTheOthersNamingIt) {
  TempDir dir;
  JobSpec job = spec();
  job.workers = 3;
  job.servers = 1;
  job.clocks = 1000;
  job.die_worker = 2;
  job.die_at_clock = 5;
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "bsp");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(waitExit(*ranks[2], 30s), 128 + SIGKILL);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(waitExit(*ranks[static_cast<size_t>(w)], 15s), 1);
    const std::string log = read_file(dir.path() + "/log-bsp-" + std::to_string(w));
    EXPECT_NE(log.find("worker 2 (rank 2) is gone"), std::string::npos) << log;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_EQ(waitExit(*ranks[3], 15s), 1) << read_file(dir.path() + "/log-bsp-3");
  EXPECT_NE(read_file(dir.path() + "/log-bsp-3").find("worker 2 (rank 2) is gone"), std::string::npos);
}

// A server stopped (SIGSTOP: its sockets stay open, so nothing fails) leaves the workers' waits to
// time out. Their messages must name that server, which does not answer a ping, rather than the
// worker it last reported waiting for, which had pushed long before.
TEST_P(PsMultiprocess, AStoppedServerIsNamedNotABystander) {
  TempDir dir;
  JobSpec job = spec();
  job.workers = 2;
  job.servers = 1;
  job.clocks = 1'000'000;
  job.clock_delay_ms = 1;
  job.edit_argv = [](int, std::vector<std::string>& argv) { setOption(argv, "--timeout", "10"); };
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "stop");
  std::this_thread::sleep_for(3s);  // past start-up, in the clock loop
  ASSERT_EQ(::kill(ranks[2]->pid(), SIGSTOP), 0);
  for (int w = 0; w < 2; ++w) {
    EXPECT_EQ(waitExit(*ranks[static_cast<size_t>(w)], 20s), 1);
    const std::string log = read_file(dir.path() + "/log-stop-" + std::to_string(w));
    EXPECT_NE(log.find("server 0 (rank 2) did not answer a ping within 1000 ms"), std::string::npos) << log;
  }
  ::kill(ranks[2]->pid(), SIGCONT);
  ranks[2]->stop(SIGKILL);
}

TEST_P(PsMultiprocess, WorkerKilledUnderAsyncTheOthersGoOn) {
  TempDir dir;
  JobSpec job = spec();
  job.workers = 3;
  job.servers = 2;
  job.clocks = 60;
  job.consistency = "async";
  job.die_worker = 1;
  job.die_at_clock = 5;
  job.clock_delay_ms = 2;
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "async");
  EXPECT_EQ(waitExit(*ranks[1], 30s), 128 + SIGKILL);
  for (int r : {0, 2, 3, 4}) {
    EXPECT_EQ(waitExit(*ranks[static_cast<size_t>(r)], 60s), 0)
        << "rank " << r << "\n"
        << read_file(dir.path() + "/log-async-" + std::to_string(r));
  }
  // They trained: the parameters moved from the initial ones.
  std::vector<float> initial(readParams(dir.path() + "/params-async-0").size());
  initialParameters(initial);
  EXPECT_FALSE(sameBits(readParams(dir.path() + "/params-async-0"), initial));
}

// Async goes on without a worker, but a dead server takes every worker with it: they fail at once
// and tell the other server why, which then fails too, naming the dead one (before, it went on
// "without" every worker and ended as if the job had finished).
TEST_P(PsMultiprocess, ServerKilledUnderAsyncFailsTheJobNamingIt) {
  TempDir dir;
  JobSpec job = spec();
  job.workers = 2;
  job.servers = 2;
  job.clocks = 1'000'000;
  job.consistency = "async";
  job.clock_delay_ms = 1;
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "async-server");
  // Past start-up, in the clock loop: a server lost while the job forms fails it another way. The
  // peers' own start-up deadline (--timeout, 60 s from launch) bounds this wait too.
  const auto give_up = std::chrono::steady_clock::now() + 50s;
  for (int w : {0, 1}) {
    const std::string log = dir.path() + "/log-async-server-" + std::to_string(w);
    while (read_file(log).find("starts at clock") == std::string::npos && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(50ms);
    }
    ASSERT_NE(read_file(log).find("starts at clock"), std::string::npos) << read_file(log);
  }
  ranks[3]->stop(SIGKILL);  // server 1
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(waitExit(*ranks[static_cast<size_t>(r)], 30s), 1)
        << "rank " << r << "\n"
        << read_file(dir.path() + "/log-async-server-" + std::to_string(r));
  }
  const std::string server0 = read_file(dir.path() + "/log-async-server-2");
  EXPECT_NE(server0.find("no worker finished after one left naming a lost server; the first"), std::string::npos)
      << server0;
  EXPECT_NE(server0.find("the job failed at server 1 (rank 3)"), std::string::npos) << server0;
}

INSTANTIATE_TEST_SUITE_P(Backends, PsMultiprocess, ::testing::Values("tcp", "verbs"),
                         [](const ::testing::TestParamInfo<std::string>& param_info) { return param_info.param; });

}  // namespace
}  // namespace poseidon::testing
