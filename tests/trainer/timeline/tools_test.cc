// The tools around the timeline: tools/plot-training turns a CsvLog file into a PNG and names the
// file, line and column of a malformed one; poseidon-timeline-merge joins workers' traces.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "trainer/timeline/chrome_trace.h"
#include "trainer/timeline/csv_log.h"
#include "trainer/timeline/recorder.h"

namespace poseidon::trainer::timeline {
namespace {

using poseidon::testing::read_file;
using poseidon::testing::run_process;
using poseidon::testing::TempDir;

constexpr const char* kPython = "/usr/bin/python3";
const std::string kPlot = std::string(POSEIDON_SOURCE_DIR) + "/tools/plot-training";

bool haveMatplotlib() { return run_process({kPython, "-c", "import matplotlib"}).exit_code == 0; }

void writeRun(const std::string& path) {
  Result<CsvLog> log = CsvLog::create(path, {"iteration", "seconds", "loss", "train_accuracy", "images_per_second"});
  ASSERT_TRUE(log) << log.status().toString();
  for (int i = 0; i < 50; ++i) {
    const double loss = i == 0 ? NAN : 2.3 / (1 + 0.1 * i);  // a NaN row is skipped in the plot
    ASSERT_TRUE(log->append(std::vector<double>{double(i), 0.05 * i, loss, 0.1 + 0.015 * i, 3000}).isOk());
  }
}

TEST(PlotTraining, WritesAPng) {
  if (!haveMatplotlib()) GTEST_SKIP() << "matplotlib missing for " << kPython << " (apt install python3-matplotlib)";
  TempDir dir;
  const std::string run = dir.path() + "/run.csv", test = dir.path() + "/test.csv", png = dir.path() + "/run.png";
  writeRun(run);
  std::ofstream(test) << "epoch,seconds,test_accuracy\n0,1.2,0.71\n1,2.45,0.80\n";
  const auto result =
      run_process({kPython, kPlot, run, "--test", test, "-o", png, "--title", "test run"}, std::chrono::seconds(60));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::string bytes = read_file(png);
  ASSERT_GT(bytes.size(), 1000u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

// A run killed mid-row leaves that row cut short (trainer/timeline/csv_log.h): the rows before
// are plotted, and the cut one is dropped, saying so.
TEST(PlotTraining, AKilledRunsCutLastRowIsDropped) {
  if (!haveMatplotlib()) GTEST_SKIP() << "matplotlib missing for " << kPython << " (apt install python3-matplotlib)";
  TempDir dir;
  const std::string run = dir.path() + "/run.csv", png = dir.path() + "/run.png";
  writeRun(run);
  std::ofstream(run, std::ios::app) << "50,2.5,0.1";
  const auto result = run_process({kPython, kPlot, run, "-o", png}, std::chrono::seconds(60));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("dropped a last row cut short"), std::string::npos) << result.output;
  EXPECT_GT(read_file(png).size(), 1000u);
}

TEST(PlotTraining, MalformedCsvNamesFileLineAndColumn) {
  if (!haveMatplotlib()) GTEST_SKIP() << "matplotlib missing for " << kPython << " (apt install python3-matplotlib)";
  TempDir dir;
  const std::string bad = dir.path() + "/bad.csv", png = dir.path() + "/bad.png";
  auto expectRefused = [&](const std::string& text, const std::string& message) {
    std::ofstream(bad, std::ios::trunc) << text;
    const auto result = run_process({kPython, kPlot, bad, "-o", png}, std::chrono::seconds(60));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_NE(result.output.find(message), std::string::npos) << result.output;
    EXPECT_FALSE(std::filesystem::exists(png));
  };
  expectRefused("seconds,loss\n0.1,2.3\n0.2,oops\n", bad + " line 3: column 'loss' value 'oops' is not a number");
  expectRefused("seconds,accuracy\n0.1,2.3\n", bad + ": no column 'loss' (columns: seconds, accuracy)");
  expectRefused("seconds,loss\n0.1,2.3,4\n", bad + " line 2: 3 fields, expected 2");
  expectRefused("", bad + ": empty");
  expectRefused("seconds,loss\n", bad + ": a header and no rows");
  const auto missing = run_process({kPython, kPlot, dir.path() + "/absent.csv"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.output.find("absent.csv: cannot read"), std::string::npos) << missing.output;
}

TEST(TimelineMergeTool, MergesAndReportsErrors) {
  TempDir dir;
  std::vector<std::string> argv = {POSEIDON_TIMELINE_MERGE_BINARY, "-o", dir.path() + "/job.json"};
  for (int rank = 0; rank < 2; ++rank) {
    Recorder recorder({.rank = rank});
    recorder.record(*recorder.addLane("compute"), recorder.internName("fc1"), Category::kForward, 0, 10);
    argv.push_back(dir.path() + "/w" + std::to_string(rank) + ".json");
    ASSERT_TRUE(writeChromeTrace(recorder.snapshot(), argv.back()).isOk());
  }
  const auto merged = run_process(argv);
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_NE(read_file(dir.path() + "/job.json").find("\"worker 1\""), std::string::npos);
  argv.push_back(argv.back());  // the same worker twice
  const auto twice = run_process(argv);
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.output.find("pid 1 is also in"), std::string::npos) << twice.output;
  EXPECT_EQ(run_process({POSEIDON_TIMELINE_MERGE_BINARY, "only.json"}).exit_code, 2);  // no -o
}

}  // namespace
}  // namespace poseidon::trainer::timeline
