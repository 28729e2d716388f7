// tools/bench-hybcomm in a tiny run: 4 workers, 2 colocated PS servers and an Adam server in
// their own network namespaces behind a tc-limited bridge, every mode for 3 iterations on small
// layers, uncontended and with one link lowered. Checks that the run completes, reports every
// mode in both cases and that its figures are sane; timings only for being plausible (the
// benchmark's findings are not a test's business on a shared machine). Needs root; skips, saying
// why, otherwise.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/support/netns.h"
#include "tests/support/process.h"

namespace poseidon::tools {
namespace {

namespace support = poseidon::testing;

const std::set<std::string> kModes = {"ps", "sfb", "ring", "adam", "closed", "adaptive"};

TEST(BenchHybComm, TinyRunReportsEveryMode) {
  if (auto why = support::netnsUnavailableReason()) GTEST_SKIP() << *why;
  for (const char* tool : {"iperf3", "tc"}) {
    if (support::run_process({"sh", "-c", std::string("command -v ") + tool}).exit_code != 0) {
      GTEST_SKIP() << tool << " is not installed (tools/build installs it)";
    }
  }
  support::TempDir dir;
  const std::string json_path = dir.path() + "/bench.json";
  const std::string log_path = dir.path() + "/bench.log";
  support::ChildProcess bench({"bash",
                               BENCH_HYBCOMM_SCRIPT,
                               "--bin",
                               HYBCOMM_TOOLS_DIR,
                               "--layers",
                               "fc:fc6=96x160,fc7=64x64,fc8=120x64;other:bn=500",
                               "--batch",
                               "8",
                               "--iterations",
                               "3",
                               "--warmup",
                               "0",
                               "--trial-iterations",
                               "1",
                               "--window",
                               "2",
                               "--onset-iterations",
                               "6",
                               "--onset-at",
                               "3",
                               "--iperf-seconds",
                               "1",
                               "--json",
                               json_path},
                              log_path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(150);
  while (bench.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // SIGTERM, not SIGKILL, so the script's trap removes its namespaces.
  const int code = bench.running() ? bench.stop(SIGTERM, std::chrono::seconds(30)) : bench.exit_code();
  const std::string log = support::read_file(log_path);
  ASSERT_EQ(code, 0) << log;

  std::ifstream in(json_path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "not JSON: " << support::read_file(json_path) << "\n" << log;
  EXPECT_GT(j.at("iperf3_bps").get<double>(), 0.0) << log;
  for (const char* c : {"open", "contended"}) {
    const auto& rows = j.at(c).at("rows");
    std::set<std::string> seen;
    for (const auto& row : rows) {
      const std::string mode = row.at("mode").get<std::string>();
      seen.insert(mode);
      EXPECT_GT(row.at("sync_seconds").get<double>(), 0.0) << c << " " << mode << "\n" << log;
      EXPECT_LT(row.at("sync_seconds").get<double>(), 10.0) << c << " " << mode << "\n" << log;
      ASSERT_EQ(row.at("layers").size(), 4u) << log;
      // The non-FC layer never goes SFB or Adam.
      const std::string bn = row.at("schemes").at("bn").get<std::string>();
      EXPECT_TRUE(bn == "PS" || bn == "ring") << c << " " << mode << ": bn went " << bn;
      EXPECT_FALSE(row.at("choices").empty()) << c << " " << mode;
    }
    EXPECT_EQ(seen, kModes) << c << "\n" << log;
    EXPECT_GT(j.at(c).at("best_single_seconds").get<double>(), 0.0) << log;
    EXPECT_NE(log.find(std::string(c == std::string("open") ? "uncontended" : "contended: worker 3")),
              std::string::npos)
        << log;
  }
  // A fixed scheme is what it says on every FC layer.
  for (const auto& row : j.at("open").at("rows")) {
    if (row.at("mode") != "sfb") continue;
    for (const char* fc : {"fc6", "fc7", "fc8"}) EXPECT_EQ(row.at("schemes").at(fc), "SFB") << log;
  }
  EXPECT_NE(log.find("adaptive / closed form time"), std::string::npos) << log;
  // The cost model was fed the measured link: every FC layer is priced for all four schemes and
  // the non-FC layer for PS and ring; the contended case prices worker 3's slower link.
  EXPECT_GT(j.at("latency_usec").get<double>(), 0.0) << log;
  for (const char* c : {"open", "contended"}) {
    for (const auto& row : j.at(c).at("rows")) {
      EXPECT_GT(row.at("model_seconds").get<double>(), 0.0) << c << " " << row.at("mode") << "\n" << log;
      for (const auto& layer : row.at("layers")) {
        EXPECT_EQ(layer.at("model_seconds").size(), layer.at("fully_connected").get<bool>() ? 4u : 2u) << log;
      }
    }
  }
  const auto fc6_ps = [&](const char* c) {
    return j.at(c).at("rows").at(0).at("layers").at(0).at("model_seconds").at("PS").get<double>();
  };
  EXPECT_GT(fc6_ps("contended"), fc6_ps("open")) << log;
  EXPECT_NE(log.find("the cost model per layer"), std::string::npos) << log;
  // The onset case: worker 0 lowered worker 3's link before measured iteration 3 of 6 in every
  // mode it ran (the event is in each worker's iteration table), and every figure is there.
  const auto& onset = j.at("onset").at("rows");
  EXPECT_EQ(onset.size(), 3u) << log;
  for (const char* mode : {"ring", "closed", "adaptive"}) {
    for (const char* figure : {"before_seconds", "after_seconds", "last_seconds", "whole_seconds"}) {
      EXPECT_GT(onset.at(mode).at(figure).get<double>(), 0.0) << mode << " " << figure << "\n" << log;
    }
  }
  EXPECT_NE(log.find("adaptive / ring: after the onset"), std::string::npos) << log;
}

}  // namespace
}  // namespace poseidon::tools
