// poseidon-train as tools/demo runs it, in small: 2 workers and 1 PS server as separate processes
// on loopback for 30 steps; every output file must be there and parse (the merged timeline holds
// both workers' compute and syncs, metrics.csv a row per step, the test accuracy is past chance),
// with --merge planned (profiled, probed and planned; the plan in summary.json).
// Under SSP / async the checkpoint options go to the servers. And bad input: a wrong --data-dir,
// --batch 0, a job size that does not fit the layout exit 2 naming the value, before anything
// waits for a peer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "tests/support/timeouts.h"
#include "tools/train/train_options.h"

namespace poseidon::testing {
namespace {

constexpr int kSteps = 30;

std::vector<std::string> csvRows(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) rows.push_back(line);
  return rows;
}

std::vector<std::string> fields(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream stream(row);
  for (std::string field; std::getline(stream, field, ',');) out.push_back(field);
  return out;
}

TEST(TrainMultiprocess, TwoWorkersAndAServerTrainAndWriteEveryOutput) {
  const std::string out = std::filesystem::temp_directory_path() / ("poseidon-train-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(out);
  const std::string root = "POSEIDON_ROOT=127.0.0.1:" + std::to_string(free_loopback_port());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{"env", "POSEIDON_RANK=" + std::to_string(r), "POSEIDON_SIZE=3", root,
                                 "POSEIDON_SECRET=train-test", POSEIDON_TRAIN_BINARY, "--workers", "2", "--ps-servers",
                                 "1", "--max-steps", std::to_string(kSteps), "--timeout", "30", "--merge", "planned",
                                 "--out", out},
        out + ".rank" + std::to_string(r) + ".log"));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(90));
  for (auto& rank : ranks) {
    while (rank->running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  for (int r = 0; r < 3; ++r) {
    const int code = ranks[r]->running() ? ranks[r]->stop(SIGKILL) : ranks[r]->exit_code();
    EXPECT_EQ(code, 0) << "rank " << r << ":\n" << read_file(out + ".rank" + std::to_string(r) + ".log");
  }

  // The merged timeline: both workers, each with its compute and its syncs.
  const nlohmann::json trace = nlohmann::json::parse(read_file(out + "/timeline.json"), nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << "timeline.json is not JSON";
  std::set<std::pair<int, std::string>> seen;  // (pid, cat)
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("ph", "") == "X") seen.insert({event["pid"].get<int>(), event["cat"].get<std::string>()});
  }
  for (int worker : {0, 1}) {
    for (const char* category : {"forward", "backward", "wait", "sync"}) {
      EXPECT_TRUE(seen.count({worker, category})) << "worker " << worker << " has no '" << category << "' event";
    }
    EXPECT_TRUE(std::filesystem::exists(out + "/timeline-worker" + std::to_string(worker) + ".json"));
  }

  // metrics.csv: the header, then one row per step with the iteration number first.
  const std::vector<std::string> metrics = csvRows(out + "/metrics.csv");
  ASSERT_EQ(metrics.size(), static_cast<size_t>(kSteps + 1));
  const std::vector<std::string> header = fields(metrics[0]);
  ASSERT_GE(header.size(), 6u);
  EXPECT_EQ(header[0], "iteration");
  EXPECT_EQ(header[2], "loss");
  for (int i = 1; i <= kSteps; ++i) {
    const std::vector<std::string> row = fields(metrics[static_cast<size_t>(i)]);
    ASSERT_EQ(row.size(), header.size()) << metrics[static_cast<size_t>(i)];
    EXPECT_EQ(std::stoi(row[0]), i);
  }

  // The test accuracy after 30 steps is far past chance (0.1); summary.json agrees with it.
  const std::vector<std::string> epochs = csvRows(out + "/epochs.csv");
  ASSERT_EQ(epochs.size(), 2u);
  const double accuracy = std::stod(fields(epochs[1])[2]);
  EXPECT_GT(accuracy, 0.3);
  const nlohmann::json summary = nlohmann::json::parse(read_file(out + "/summary.json"), nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << "summary.json is not JSON";
  EXPECT_EQ(summary["iterations"], kSteps);
  EXPECT_DOUBLE_EQ(summary["test_accuracy"].get<double>(), accuracy);
  EXPECT_GT(summary["images_per_s"].get<double>(), 0.0);
  EXPECT_GT(summary["bytes_sent_by_worker0"]["ps_bytes"].get<uint64_t>(), 0u);
  const double overlap = summary["sync_overlapped_by_backward"].get<double>();
  EXPECT_GE(overlap, 0.0);
  EXPECT_LE(overlap, 1.0);
  // --merge planned: the workers profiled their backward passes, worker 0 probed and planned.
  EXPECT_EQ(summary["options"]["merge"], "planned");
  ASSERT_TRUE(summary["merge_plan"].is_object()) << summary.dump();
  EXPECT_EQ(summary["merge_plan"]["layers"].get<size_t>(), 4u);
  EXPECT_GT(summary["merge_plan"]["backward_s"].get<double>(), 0.0);
  std::filesystem::remove_all(out);
}

// Under SSP / async --checkpoint-every and --resume become the servers' checkpoints (the workers'
// data positions beside them: tests/trainer/api/server_checkpoint_test.cc runs them); under BSP
// they stay the workers' own. Two whole runs of poseidon-train cost 27 s under ASan, so the
// options are checked here; the Session's side runs in server_checkpoint_test.cc.
TEST(TrainMultiprocess, CheckpointOptionsGoToTheServersUnderSspAndAsync) {
  TempDir dir;
  for (const std::string consistency : {"ssp:1", "async", "bsp"}) {
    tools::TrainCommandLine c;
    CLI::App app;
    tools::addTrainOptions(app, c);
    std::vector<std::string> argv = {"--consistency", consistency,          "--hybcomm", "ps",      "--checkpoint-dir",
                                     dir.path(),      "--checkpoint-every", "5",         "--resume"};
    std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
    ASSERT_NO_THROW(app.parse(argv));
    ASSERT_EQ(tools::checkTrainOptions(c, nullptr), "") << consistency;
    const trainer::ServerCheckpointOptions servers = tools::sessionOptions(c, "127.0.0.1").server_checkpoints;
    if (consistency == "bsp") {
      EXPECT_EQ(servers.dir, "") << "BSP's workers checkpoint the model themselves";
      continue;
    }
    EXPECT_EQ(servers.dir, dir.path()) << consistency;
    EXPECT_EQ(servers.every, 5u) << consistency;
    EXPECT_TRUE(servers.resume) << consistency;
  }
}

// Stale gradients add momentum: without --optimizer, SSP with a bound and async take the lower
// rate (tools/train/train_options.h says what collapsed at the other); BSP and SSP(0) keep it;
// an --optimizer given is taken as it is.
TEST(TrainMultiprocess, TheDefaultRateIsLowerWhereGradientsAreStale) {
  const auto rate = [](std::vector<std::string> argv) {
    tools::TrainCommandLine c;
    CLI::App app;
    tools::addTrainOptions(app, c);
    std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
    app.parse(argv);
    const std::string error = tools::checkTrainOptions(c, nullptr);
    EXPECT_EQ(error, "");
    return c.optimizer.lr.base_lr;
  };
  EXPECT_EQ(rate({"--consistency", "bsp"}), 0.05);
  EXPECT_EQ(rate({"--consistency", "ssp:0", "--hybcomm", "ps"}), 0.05);
  EXPECT_EQ(rate({"--consistency", "ssp:2", "--hybcomm", "ps"}), 0.02);
  EXPECT_EQ(rate({"--consistency", "async", "--hybcomm", "ps"}), 0.02);
  EXPECT_EQ(rate({"--consistency", "async", "--hybcomm", "ps", "--optimizer", "sgd:lr=0.1"}), 0.1);
}

TEST(TrainMultiprocess, BadInputExitsTwoNamingTheValue) {
  // An earlier run's checkpoint of worker 1 (only its name is read before the run).
  TempDir earlier;
  std::ofstream(earlier.path() + "/worker-1-20.ckpt") << "from an earlier run";
  struct Case {
    std::vector<std::string> argv;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{POSEIDON_TRAIN_BINARY, "--data-dir", "/nonexistent/fashion"}, "/nonexistent/fashion"},
      {{POSEIDON_TRAIN_BINARY, "--batch", "0"}, "--batch 0"},
      {{POSEIDON_TRAIN_BINARY, "--hybcomm", "fast"}, "--hybcomm 'fast'"},
      {{POSEIDON_TRAIN_BINARY, "--merge", "all"}, "merge mode 'all'"},
      {{POSEIDON_TRAIN_BINARY, "--merge", "fixed:0-3"}, "fully-connected layer 'fc1'"},
      {{POSEIDON_TRAIN_BINARY, "--workers", "1", "--merge", "planned"}, "--merge planned: one worker"},
      {{POSEIDON_TRAIN_BINARY, "--optimizer", "sgd:lr=oops"}, "--optimizer"},
      {{POSEIDON_TRAIN_BINARY, "--checkpoint-every", "10"}, "--checkpoint-every needs --checkpoint-dir"},
      {{POSEIDON_TRAIN_BINARY, "--checkpoint-dir", earlier.path(), "--checkpoint-every", "10"},
       "--checkpoint-dir without --resume: '" + earlier.path() + "' holds worker 1's checkpoint of iteration 20"},
      {{POSEIDON_TRAIN_BINARY, "--adam-servers", "1"}, "--adam-servers 1"},
      // The layout (4 workers + 2 PS servers) needs 6 ranks.
      {{"env", "POSEIDON_RANK=0", "POSEIDON_SIZE=5", "POSEIDON_ROOT=127.0.0.1:1", POSEIDON_TRAIN_BINARY}, "= 6 ranks"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = run_process(c.argv, std::chrono::seconds(20));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << r.output;
  }
}

}  // namespace
}  // namespace poseidon::testing
