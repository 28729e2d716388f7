// The start-up check of a PS job, each rank in its own process: one rank started with another
// tensor size, chunk size, worker count, consistency model or (a server) optimizer or checkpoint
// schedule makes every rank exit non-zero within the start-up deadline, each naming the ranks and
// the first differing item — instead of training silently wrong parameters or timing out without
// a cause.
#include <gtest/gtest.h>

#include "tests/ps/ps_job_launch.h"
#include "tests/support/mesh.h"
#include "tests/support/process.h"

namespace poseidon::testing {
namespace {

using namespace std::chrono_literals;

struct Mismatch {
  const char* name;
  int rank;  // the rank started differently (2 workers, then 2 servers)
  const char* option;
  const char* value;
  const char* every_log;  // what every rank's log names
};

class PsStartCheck : public ::testing::TestWithParam<Mismatch> {};

TEST_P(PsStartCheck, EveryRankFailsNamingTheFirstDifference) {
  const Mismatch m = GetParam();
  TempDir dir;
  JobSpec job;
  job.workers = 2;
  job.servers = 2;
  job.clocks = 5;
  job.edit_argv = [&](int rank, std::vector<std::string>& argv) {
    if (rank == m.rank) setOption(argv, m.option, m.value);
  };
  auto ranks = launchJob(PS_PEER_BINARY, job, dir.path(), "check");
  const auto started = std::chrono::steady_clock::now();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const int code = waitExit(*ranks[r], 30s);
    const std::string log = read_file(dir.path() + "/log-check-" + std::to_string(r));
    EXPECT_EQ(code, 1) << "rank " << r << ":\n" << log;
    EXPECT_NE(log.find("were not started alike"), std::string::npos) << "rank " << r << ":\n" << log;
    EXPECT_NE(log.find(m.every_log), std::string::npos) << "rank " << r << ":\n" << log;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
}

INSTANTIATE_TEST_SUITE_P(Kinds, PsStartCheck,
                         ::testing::Values(
                             // The case: one tensor 10 floats longer (fc2.b has 3 floats).
                             Mismatch{"tensor_size", 1, "--extra-floats", "10", "fc2.b = "},
                             Mismatch{"chunk_size", 3, "--chunk-bytes", "8192", "ps.chunk_bytes = "},
                             // Rank 0 believes in 3 workers and 1 server: the same 4 ranks, another job.
                             Mismatch{"worker_count", 0, "--workers", "3", "ps.workers = "},
                             Mismatch{"consistency", 1, "--consistency", "ssp:2", "ps.consistency = "},
                             // Only servers hold the optimizer; the workers read the servers' comparison.
                             Mismatch{"server_optimizer", 3, "--optimizer", "sgd:lr=0.5", "ps.optimizer = "},
                             // One server checkpoints and the other not: their files would never share a clock.
                             Mismatch{"server_checkpoints", 2, "--checkpoint-dir", "/tmp", "ps.checkpoints = "}),
                         [](const ::testing::TestParamInfo<Mismatch>& param_info) {
                           return std::string(param_info.param.name);
                         });

}  // namespace
}  // namespace poseidon::testing
