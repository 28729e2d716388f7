// Exact restart in HybComm mode, across processes: a job of 2 workers and 1 PS server trains with
// checkpoints; kill -9 of a worker, or of the server, ends every other rank with an error naming
// the lost one within the sync deadline; a restart with --resume from the checkpoints then ends
// with parameters bit-identical to a run that was never interrupted. A run that does not resume
// is refused where an earlier run's checkpoints lie.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/support/process.h"

namespace poseidon::testing {
namespace {

constexpr int kWorkers = 2;
constexpr int kSize = 3;  // + 1 PS server (rank 2)
constexpr int kSyncTimeoutMs = 8000;
const std::string kSteps = "30";

struct JobRun {
  std::vector<int> exit_codes;
  std::vector<double> exit_seconds;  // from the start, when each rank was seen to exit
  std::vector<std::string> logs;
  double seconds = 0;
};

// Starts every rank with `extra(rank)` added to its arguments and waits for all.
JobRun runJob(const std::string& dir, const std::string& checkpoints,
              const std::function<std::vector<std::string>(int)>& extra) {
  const std::string store =
      dir + "/store-" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::filesystem::create_directories(store);
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  JobRun run;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kSize; ++r) {
    std::vector<std::string> argv = {SESSION_PEER_BINARY,
                                     "--rank",
                                     std::to_string(r),
                                     "--workers",
                                     std::to_string(kWorkers),
                                     "--servers",
                                     "1",
                                     "--store-dir",
                                     store,
                                     "--steps",
                                     kSteps,
                                     "--checkpoint-dir",
                                     checkpoints,
                                     "--checkpoint-every",
                                     "5",
                                     "--params-out",
                                     dir + "/params-" + std::to_string(r),
                                     "--timeout-ms",
                                     std::to_string(kSyncTimeoutMs)};
    for (const std::string& a : extra(r)) argv.push_back(a);
    run.logs.push_back(dir + "/log-" + std::to_string(r) + "-" + std::to_string(ranks.size()) + ".txt");
    ranks.push_back(std::make_unique<ChildProcess>(argv, run.logs.back()));
  }
  run.exit_codes.assign(ranks.size(), -1);
  run.exit_seconds.assign(ranks.size(), 0.0);
  // Each rank ends by its own deadlines; the test's timeout (CMake) is the last resort.
  for (size_t left = ranks.size(); left > 0;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (size_t r = 0; r < ranks.size(); ++r) {
      if (run.exit_codes[r] != -1 || ranks[r]->running()) continue;
      run.exit_codes[r] = ranks[r]->exit_code();
      run.exit_seconds[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      --left;
    }
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::string& log : run.logs) log = read_file(log);
  return run;
}

std::string paramsOf(const std::string& dir, int worker) {
  return read_file(dir + "/params-" + std::to_string(worker));
}

class SessionRestart : public ::testing::TestWithParam<int> {};  // the rank that is killed

TEST_P(SessionRestart, KillNinePointsAtTheLostRankAndResumeGivesTheSameBits) {
  const int victim = GetParam();
  TempDir dir;
  const std::string clean = dir.path() + "/clean", crashed = dir.path() + "/crashed";
  std::filesystem::create_directories(clean);
  std::filesystem::create_directories(crashed);

  const JobRun uninterrupted = runJob(clean, clean + "/ckpt", [](int) { return std::vector<std::string>{}; });
  for (int r = 0; r < kSize; ++r)
    ASSERT_EQ(uninterrupted.exit_codes[r], 0) << "rank " << r << ":\n" << uninterrupted.logs[r];
  const std::string expected = paramsOf(clean, 0);
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(paramsOf(clean, 1), expected) << "the replicas differ in the uninterrupted run";

  const std::string checkpoints = crashed + "/ckpt";
  const JobRun crash = runJob(crashed, checkpoints, [&](int r) {
    if (r != victim) return std::vector<std::string>{};
    if (victim < kWorkers) return std::vector<std::string>{"--die-at-step", "17"};
    return std::vector<std::string>{"--die-when-file", checkpoints + "/worker-0-10.ckpt"};
  });
  EXPECT_EQ(crash.exit_codes[static_cast<size_t>(victim)], 128 + 9) << crash.logs[static_cast<size_t>(victim)];
  for (int r = 0; r < kSize; ++r) {
    if (r == victim) continue;
    EXPECT_EQ(crash.exit_codes[r], 1) << "rank " << r << " should fail:\n" << crash.logs[r];
    EXPECT_NE(crash.logs[r].find("rank " + std::to_string(victim)), std::string::npos)
        << "rank " << r << " does not name the lost rank " << victim << ":\n"
        << crash.logs[r];
  }
  // Each survivor gives up within its sync deadline of the kill (a broken connection is noticed at
  // once; a sync that waits for the lost rank's part gives up by its deadline).
  for (int r = 0; r < kSize; ++r) {
    const double after_kill =
        crash.exit_seconds[static_cast<size_t>(r)] - crash.exit_seconds[static_cast<size_t>(victim)];
    EXPECT_LT(after_kill, kSyncTimeoutMs / 1000.0 + 2.0) << "rank " << r << " took too long to notice the lost rank";
  }

  const JobRun resumed = runJob(crashed, checkpoints, [](int) { return std::vector<std::string>{"--resume"}; });
  for (int r = 0; r < kSize; ++r) ASSERT_EQ(resumed.exit_codes[r], 0) << "rank " << r << ":\n" << resumed.logs[r];
  EXPECT_TRUE(paramsOf(crashed, 0) == expected) << "worker 0 resumed to other parameters";
  EXPECT_TRUE(paramsOf(crashed, 1) == expected) << "worker 1 resumed to other parameters";
}

// The same job again, not resuming, into the checkpoints of the first, of which only worker 1's
// are left: every worker's first save is refused naming them, and nothing is written beside them.
TEST(SessionCheckpoints, AFreshRunsFirstSaveBesideAnEarlierRunsCheckpointsIsRefusedOnEveryWorker) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  const JobRun first = runJob(dir.path(), checkpoints, [](int) { return std::vector<std::string>{}; });
  for (int r = 0; r < kSize; ++r) ASSERT_EQ(first.exit_codes[r], 0) << "rank " << r << ":\n" << first.logs[r];
  const auto files = [&] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(checkpoints)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  ASSERT_EQ(files(),
            (std::vector<std::string>{"worker-0-25.ckpt", "worker-0-30.ckpt", "worker-1-25.ckpt", "worker-1-30.ckpt"}));
  std::filesystem::remove(checkpoints + "/worker-0-25.ckpt");
  std::filesystem::remove(checkpoints + "/worker-0-30.ckpt");
  const std::vector<std::string> before = files();

  const JobRun again = runJob(dir.path(), checkpoints, [](int) { return std::vector<std::string>{}; });
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(again.exit_codes[w], 1) << again.logs[w];
    EXPECT_NE(again.logs[w].find(
                  "holds worker 1's checkpoints of iterations 25, 30, of an earlier run this one did not resume from"),
              std::string::npos)
        << again.logs[w];
  }
  EXPECT_EQ(files(), before);
}

INSTANTIATE_TEST_SUITE_P(Victims, SessionRestart, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param < kWorkers ? std::string("worker") : std::string("server");
                         });

}  // namespace
}  // namespace poseidon::testing
