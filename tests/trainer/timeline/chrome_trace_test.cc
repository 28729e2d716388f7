// Chrome trace JSON, parsed back with nlohmann-json: metadata naming the worker and its lanes,
// "X" events in microseconds, dropped events reported; several workers merged into one trace.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/mesh.h"
#include "trainer/timeline/chrome_trace.h"
#include "trainer/timeline/recorder.h"

namespace poseidon::trainer::timeline {
namespace {

using nlohmann::json;
using poseidon::testing::TempDir;

Trace workerTrace(int rank, size_t capacity = 16, int events = 2) {
  Recorder recorder({.rank = rank, .events_per_lane = capacity});
  const LaneId compute = *recorder.addLane("compute");
  const LaneId sync = *recorder.addLane("sync-0");
  const NameId fc = recorder.internName("fc1");
  for (int i = 0; i < events; ++i)
    recorder.record(compute, fc, Category::kBackward, 1000000 + i * 4000, 1002500 + i * 4000, i);
  recorder.record(sync, fc, Category::kSync, 1001000, 1004000);
  return recorder.snapshot();
}

std::vector<json> eventsWhere(const json& document, const std::string& ph, const std::string& name = "") {
  std::vector<json> out;
  for (const json& event : document["traceEvents"]) {
    if (event["ph"] == ph && (name.empty() || event["name"] == name)) out.push_back(event);
  }
  return out;
}

TEST(ChromeTrace, StructureParsesBack) {
  const json document = json::parse(chromeTraceJson(workerTrace(2)));
  ASSERT_TRUE(document["traceEvents"].is_array());
  const std::vector<json> process = eventsWhere(document, "M", "process_name");
  ASSERT_EQ(process.size(), 1u);
  EXPECT_EQ(process[0]["pid"], 2);
  EXPECT_EQ(process[0]["args"]["name"], "worker 2");
  const std::vector<json> threads = eventsWhere(document, "M", "thread_name");
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0]["tid"], 0);
  EXPECT_EQ(threads[0]["args"]["name"], "compute");
  EXPECT_EQ(threads[1]["args"]["name"], "sync-0");
  const std::vector<json> complete = eventsWhere(document, "X");
  ASSERT_EQ(complete.size(), 3u);
  EXPECT_EQ(complete[0]["name"], "fc1");
  EXPECT_EQ(complete[0]["cat"], "backward");
  EXPECT_EQ(complete[0]["pid"], 2);
  EXPECT_EQ(complete[0]["tid"], 0);
  EXPECT_DOUBLE_EQ(complete[0]["ts"].get<double>(), 1000.0);  // 1000000 ns
  EXPECT_DOUBLE_EQ(complete[0]["dur"].get<double>(), 2.5);
  EXPECT_EQ(complete[1]["args"]["iteration"], 1);
  EXPECT_EQ(complete[2]["cat"], "sync");
  EXPECT_FALSE(complete[2].contains("args"));  // no iteration given
  EXPECT_EQ(document["otherData"]["dropped_events"]["worker 2"], 0);
  EXPECT_TRUE(eventsWhere(document, "M", "process_labels").empty());
}

TEST(ChromeTrace, DroppedEventsAreReported) {
  const json document = json::parse(chromeTraceJson(workerTrace(0, 3, 10)));  // 7 of 10 backward dropped
  EXPECT_EQ(document["otherData"]["dropped_events"]["worker 0"], 7);
  const std::vector<json> labels = eventsWhere(document, "M", "process_labels");
  ASSERT_EQ(labels.size(), 1u);
  EXPECT_EQ(labels[0]["args"]["labels"], "7 events dropped: timeline full");
}

TEST(ChromeTrace, MergesWorkersIntoOneTrace) {
  TempDir dir;
  std::vector<std::string> paths;
  for (int rank = 0; rank < 3; ++rank) {
    paths.push_back(dir.path() + "/worker-" + std::to_string(rank) + ".json");
    ASSERT_TRUE(writeChromeTrace(workerTrace(rank, 3, rank == 1 ? 5 : 1), paths.back()).isOk());
  }
  const std::string merged_path = dir.path() + "/merged.json";
  const Status merged = mergeChromeTraceFiles(paths, merged_path);
  ASSERT_TRUE(merged.isOk()) << merged.toString();
  std::ifstream in(merged_path);
  const json document = json::parse(in);
  const std::vector<json> processes = eventsWhere(document, "M", "process_name");
  ASSERT_EQ(processes.size(), 3u);
  for (int rank = 0; rank < 3; ++rank) EXPECT_EQ(processes[rank]["args"]["name"], "worker " + std::to_string(rank));
  EXPECT_EQ(eventsWhere(document, "X").size(), 2u + 4u + 2u);
  EXPECT_EQ(document["otherData"]["dropped_events"]["worker 1"], 2);
  EXPECT_EQ(document["otherData"]["dropped_events"]["worker 2"], 0);
}

TEST(ChromeTrace, MergeRefusesDuplicatePidsAndForeignFiles) {
  TempDir dir;
  const std::string a = dir.path() + "/a.json", b = dir.path() + "/b.json", bad = dir.path() + "/bad.json";
  ASSERT_TRUE(writeChromeTrace(workerTrace(1), a).isOk());
  ASSERT_TRUE(writeChromeTrace(workerTrace(1), b).isOk());
  const Result<std::string> duplicate = mergeChromeTraces({a, b});
  ASSERT_FALSE(duplicate);
  EXPECT_NE(duplicate.status().message().find(b + ": pid 1 is also in " + a), std::string::npos)
      << duplicate.status().message();
  std::ofstream(bad) << "{\"events\": []}";
  const Result<std::string> foreign = mergeChromeTraces({a, bad});
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.status().message().find(bad + ": no traceEvents array"), std::string::npos);
  std::ofstream(bad) << "{\"traceEvents\": [";
  EXPECT_FALSE(mergeChromeTraces({bad}));
  EXPECT_FALSE(mergeChromeTraces({dir.path() + "/absent.json"}));
}

}  // namespace
}  // namespace poseidon::trainer::timeline
