// tools/bench-ps in a short run: 4 poseidon-ps-bench workers and 2 poseidon-server shards in their
// own network namespaces behind a tc-limited bridge. Checks that the run completes and that its
// figures are sane; byte counts are checked exactly, timings only for being plausible (timing
// targets belong to the benchmark itself, not to a test on a shared machine). Needs root; skips,
// saying why, otherwise.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/support/netns.h"
#include "tests/support/process.h"

namespace poseidon::tools {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::read_file;
using poseidon::testing::run_process;
using poseidon::testing::TempDir;

constexpr uint64_t kTensorBytes = 262144 * 4;  // uniform:8x262144: 8 tensors of 1 MiB, 4 chunks of 2 MiB
constexpr uint64_t kModelBytes = 8 * kTensorBytes;
constexpr int kWorkers = 4;
constexpr int kIterations = 3;
constexpr int kWarmup = 1;

TEST(BenchPs, ShortRunReportsSaneFigures) {
  if (auto why = poseidon::testing::netnsUnavailableReason()) GTEST_SKIP() << *why;
  for (const char* tool : {"iperf3", "tc"}) {
    if (run_process({"sh", "-c", std::string("command -v ") + tool}).exit_code != 0) {
      GTEST_SKIP() << tool << " is not installed (tools/build installs it)";
    }
  }
  TempDir dir;
  const std::string json_path = dir.path() + "/bench.json";
  const std::string log_path = dir.path() + "/bench.log";
  ChildProcess bench(
      {"bash", BENCH_PS_SCRIPT, "--bin", PS_TOOLS_DIR, "--model", "uniform:8x262144", "--rate", "1gbit", "--iterations",
       std::to_string(kIterations), "--warmup", std::to_string(kWarmup), "--iperf-seconds", "1", "--json", json_path},
      log_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (bench.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // SIGTERM, not SIGKILL, so the script's trap removes its namespaces.
  const int code = bench.running() ? bench.stop(SIGTERM, std::chrono::seconds(30)) : bench.exit_code();
  ASSERT_EQ(code, 0) << read_file(log_path);

  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON: " << read_file(json_path) << "\n" << read_file(log_path);
  const std::string log = read_file(log_path);

  // Byte counts: 4 chunks round-robin on 2 servers, so each holds half the model; every worker
  // pushed it once per iteration (warm-up included) and pulled it once more (the initial pull).
  const uint64_t shard = kModelBytes / 2;
  for (int s = 0; s < 2; ++s) {
    EXPECT_EQ(j.at("server_bytes_pushed").at(s).get<uint64_t>(), kWorkers * (kIterations + kWarmup) * shard) << log;
    EXPECT_EQ(j.at("server_bytes_pulled").at(s).get<uint64_t>(), kWorkers * (kIterations + kWarmup + 1) * shard) << log;
  }
  EXPECT_LE(j.at("server_traffic_spread_percent").get<double>(), 5.0) << log;
  // The bottleneck is each server's link: 4 workers x half the model each way.
  EXPECT_EQ(j.at("bottleneck_bytes_per_iteration").get<double>(), static_cast<double>(kWorkers * shard)) << log;

  // Timings: only plausible. tbf lets a burst through above the rate, nothing more.
  const double rate = j.at("rate_bps").get<double>();
  EXPECT_EQ(rate, 1e9);
  const double iperf = j.at("iperf3_bps").get<double>();
  EXPECT_GT(iperf, 0.5 * rate) << log;
  EXPECT_LT(iperf, 1.1 * rate) << log;
  const double vs_rate = j.at("vs_rate").get<double>();
  EXPECT_GT(vs_rate, 0.0) << log;
  EXPECT_LT(vs_rate, 1.2) << log;
  ASSERT_EQ(j.at("worker_goodput_bps").size(), static_cast<size_t>(kWorkers)) << log;
  for (const auto& goodput : j.at("worker_goodput_bps")) EXPECT_GT(goodput.get<double>(), 0.0) << log;
  EXPECT_NE(log.find("bottleneck link goodput"), std::string::npos) << log;
}

}  // namespace
}  // namespace poseidon::tools
