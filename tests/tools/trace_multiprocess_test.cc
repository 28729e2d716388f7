// poseidon-trace in small: a tiny trace model (two convolutions and two FC layers, its rate
// given) for a few iterations with 2 workers and 1 PS server as processes on loopback, under both
// schedules; the outputs must be sane: each iteration at least as long as the compute it slept,
// the idle share in [0, 1], bytes under each scheme HybComm picked. And bad command lines exit 2
// naming the value.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/timeouts.h"

namespace poseidon::testing {
namespace {

// 2 x 2 ms of conv, 1 ms of FC per iteration at 1000 images/s and K = 4 (FLOPs: conv 2 x 2M, FC 2 x 1M).
constexpr const char* kTinyModel = "conv:c1=16x8x3x3@32x32,c2=16x16x3x3@16x16;fc:f1=64x256+bias,f2=10x64+bias;batch=4";
constexpr int kIterations = 4;

void runJob(const std::string& out, const std::vector<std::string>& extra) {
  const std::string root = "POSEIDON_ROOT=127.0.0.1:" + std::to_string(free_loopback_port());
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> argv{"env",
                                  "POSEIDON_RANK=" + std::to_string(r),
                                  "POSEIDON_SIZE=3",
                                  root,
                                  "POSEIDON_SECRET=trace-test",
                                  POSEIDON_TRACE_BINARY,
                                  "--model",
                                  kTinyModel,
                                  "--images-per-s",
                                  "1000",
                                  "--workers",
                                  "2",
                                  "--ps-servers",
                                  "1",
                                  "--iterations",
                                  std::to_string(kIterations),
                                  "--warmup",
                                  "1",
                                  "--link",
                                  "1gbit",
                                  "--rate-cap",
                                  "100mbit",
                                  "--timeout",
                                  "30",
                                  "--out",
                                  out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ranks.push_back(std::make_unique<ChildProcess>(argv, out + ".rank" + std::to_string(r) + ".log"));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(60));
  for (auto& rank : ranks) {
    while (rank->running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int r = 0; r < 3; ++r) {
    const int code = ranks[r]->running() ? ranks[r]->stop(SIGKILL) : ranks[r]->exit_code();
    EXPECT_EQ(code, 0) << "rank " << r << ":\n" << read_file(out + ".rank" + std::to_string(r) + ".log");
  }
}

TEST(TraceMultiprocess, TwoWorkersAndAServerReportSaneFigures) {
  for (const std::string schedule : {"wfbp", "no-overlap"}) {
    SCOPED_TRACE(schedule);
    const std::string out =
        std::filesystem::temp_directory_path() / ("poseidon-trace-test-" + std::to_string(getpid()) + "-" + schedule);
    std::filesystem::remove_all(out);
    runJob(out, {"--schedule", schedule});
    for (int worker : {0, 1}) {
      const std::string path = out + "/worker-" + std::to_string(worker) + ".json";
      const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << path << " is not JSON";
      EXPECT_EQ(j["schedule"], schedule);
      EXPECT_DOUBLE_EQ(j["scale"].get<double>(), 10);  // 1 Gbit/s under a 100 Mbit/s cap
      const double model_compute = j["model_compute_seconds"].get<double>();
      EXPECT_NEAR(model_compute, 4.0 / 1000, 1e-9);  // K / rate
      const double iteration = j["iteration_seconds"].get<double>();
      const double compute = j["compute_seconds"].get<double>();
      // Sleeps never end early; the iteration holds them and the waits.
      EXPECT_GE(compute, 0.99 * model_compute);
      EXPECT_GE(iteration, compute);
      const double idle = j["idle_share"].get<double>();
      EXPECT_GE(idle, 0.0);
      EXPECT_LE(idle, 1.0);
      EXPECT_GE(j["ratio"].get<double>(), 0.99);
      // The ratio's floor: the bytes and one latency, at most the cost model's latency per message.
      const double floor = j["floor_comm_seconds"].get<double>();
      EXPECT_GT(floor, 0.0);
      EXPECT_LE(floor, j["least_comm_seconds"].get<double>());
      EXPECT_NEAR(j["ratio"].get<double>(), iteration / std::max(compute, floor), 1e-9);
      // The closed form picks SFB for some layer of this model or PS for all; either way bytes moved.
      const double ps = j["bytes"]["PS"]["sent_per_iteration"].get<double>();
      const double sfb = j["bytes"]["SFB"]["sent_per_iteration"].get<double>();
      EXPECT_GT(ps + sfb, 0.0);
      EXPECT_EQ(j["bytes"]["PS"]["syncs"].get<uint64_t>() + j["bytes"]["SFB"]["syncs"].get<uint64_t>(),
                4u * kIterations);  // every layer once per measured iteration
      // One CSV row per measured iteration, each sane on its own.
      std::ifstream csv(out + "/iterations-worker" + std::to_string(worker) + ".csv");
      std::string line;
      std::getline(csv, line);
      EXPECT_EQ(line, "iteration,seconds,compute_seconds,wait_seconds,idle_share");
      int rows = 0;
      for (; std::getline(csv, line); ++rows) {
        std::stringstream fields(line);
        std::vector<double> v;
        for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stod(f));
        ASSERT_EQ(v.size(), 5u) << line;
        EXPECT_GE(v[1], v[2]) << line;
        EXPECT_GE(v[4], 0.0) << line;
        EXPECT_LE(v[4], 1.0) << line;
      }
      EXPECT_EQ(rows, kIterations);
    }
    std::filesystem::remove_all(out);
  }
}

// MG-WFBP planned at start-up: worker 0 probes the link to worker 1, plans, and both report the
// plan; every layer is still reported once per iteration (a merged unit's record per member).
TEST(TraceMultiprocess, APlannedMergeIsReportedWithItsPrediction) {
  const std::string out =
      std::filesystem::temp_directory_path() / ("poseidon-trace-test-" + std::to_string(getpid()) + "-merge");
  std::filesystem::remove_all(out);
  runJob(out, {"--merge", "planned", "--hybcomm", "ps"});
  std::string groups;
  for (int worker : {0, 1}) {
    const std::string path = out + "/worker-" + std::to_string(worker) + ".json";
    const nlohmann::json j = nlohmann::json::parse(read_file(path), nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << path << " is not JSON";
    EXPECT_EQ(j["merge"], "planned");
    const nlohmann::json& plan = j["merge_plan"];
    ASSERT_TRUE(plan.is_object()) << j.dump();
    EXPECT_EQ(plan["layers"].get<size_t>(), 4u);
    EXPECT_GE(plan["messages"].get<size_t>(), 3u);    // the FC layers always travel alone
    EXPECT_GT(plan["latency_s"].get<double>(), 0.0);  // probed
    EXPECT_LE(plan["predicted_s"].get<double>(), plan["unmerged_s"].get<double>() * (1 + 1e-9));
    if (worker == 0) groups = plan["groups"];
    EXPECT_EQ(plan["groups"], groups);  // worker 0's plan, on every worker
    EXPECT_EQ(j["bytes"]["PS"]["syncs"].get<uint64_t>(), 4u * kIterations);
  }
  std::filesystem::remove_all(out);
}

TEST(TraceMultiprocess, BadInputExitsTwoNamingTheValue) {
  struct Case {
    std::vector<std::string> argv;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{POSEIDON_TRACE_BINARY, "--schedule", "eager"}, "--schedule 'eager'"},
      {{POSEIDON_TRACE_BINARY, "--hybcomm", "fast"}, "--hybcomm 'fast'"},
      {{POSEIDON_TRACE_BINARY, "--link", "10gbps"}, "--link '10gbps'"},
      {{POSEIDON_TRACE_BINARY, "--rate-cap", "0mbit"}, "--rate-cap '0mbit'"},
      {{POSEIDON_TRACE_BINARY, "--model", "fc:f=2x2"}, "no single-GPU rate"},
      {{POSEIDON_TRACE_BINARY, "--model", "nonet"}, "--model"},
      {{POSEIDON_TRACE_BINARY, "--iterations", "0"}, "--iterations 0"},
      {{POSEIDON_TRACE_BINARY, "--merge", "on"}, "merge mode 'on'"},
      {{POSEIDON_TRACE_BINARY, "--merge-cost", "fast"}, "--merge-cost 'fast'"},
      {{POSEIDON_TRACE_BINARY, "--send-budget", "50mb"}, "--send-budget '50mb'"},
      {{POSEIDON_TRACE_BINARY, "--send-budget", "1e300gbit"}, "at most 1000gbit"},
      {{POSEIDON_TRACE_BINARY, "--send-budget", "1kbit"}, "send_budget_bytes_per_s 125 is below 1024"},
      {{POSEIDON_TRACE_BINARY, "--send-budget-share", "host0"}, "a share of no budget"},
      {{POSEIDON_TRACE_BINARY, "--model", kTinyModel, "--images-per-s", "1000", "--merge", "fixed:0-3"},
       "fully-connected layer 'f1'"},
      {{"env", "POSEIDON_RANK=0", "POSEIDON_SIZE=5", "POSEIDON_ROOT=127.0.0.1:1", POSEIDON_TRACE_BINARY}, "= 8"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = run_process(c.argv, std::chrono::seconds(20));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << r.output;
  }
}

}  // namespace
}  // namespace poseidon::testing
