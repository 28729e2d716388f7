#include "trainer/timeline/chrome_trace.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace poseidon::trainer::timeline {
namespace {

using nlohmann::json;

json metadata(const char* name, int pid, int64_t tid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

json traceDocument(json events, json dropped) {
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", {{"dropped_events", std::move(dropped)}}}};
}

Status writeFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) return errnoStatus(StatusCode::kIoError, temporary + ": cannot create");
    out << text;
    out.flush();
    if (!out) return errnoStatus(StatusCode::kIoError, temporary + ": write failed");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return errnoStatus(StatusCode::kIoError, "rename " + temporary + " to " + path);
  }
  return Status::ok();
}

Result<json> readTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errnoStatus(StatusCode::kIoError, path + ": cannot open");
  json document = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return makeStatus(StatusCode::kInvalidArgument, "{}: not valid JSON", path);
  if (!document.is_object() || !document.contains("traceEvents") || !document["traceEvents"].is_array()) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: no traceEvents array, expected a Chrome trace", path);
  }
  return document;
}

}  // namespace

std::string chromeTraceJson(const Trace& trace) {
  json events = json::array();
  events.push_back(metadata("process_name", trace.rank, 0, {{"name", trace.process}}));
  events.push_back(metadata("process_sort_index", trace.rank, 0, {{"sort_index", trace.rank}}));
  const uint64_t dropped = trace.droppedTotal();
  if (dropped > 0) {
    events.push_back(metadata("process_labels", trace.rank, 0,
                              {{"labels", fmt::format("{} events dropped: timeline full", dropped)}}));
  }
  for (size_t lane = 0; lane < trace.lanes.size(); ++lane) {
    const auto tid = static_cast<int64_t>(lane);
    events.push_back(metadata("thread_name", trace.rank, tid, {{"name", trace.lanes[lane]}}));
    events.push_back(metadata("thread_sort_index", trace.rank, tid, {{"sort_index", tid}}));
  }
  for (const Interval& interval : trace.intervals) {
    json event = {{"ph", "X"},
                  {"name", trace.nameOf(interval)},
                  {"cat", categoryName(interval.category)},
                  {"pid", trace.rank},
                  {"tid", interval.lane},
                  {"ts", static_cast<double>(interval.start_ns) / 1e3},
                  {"dur", static_cast<double>(interval.end_ns - interval.start_ns) / 1e3}};
    if (interval.iteration >= 0) event["args"] = {{"iteration", interval.iteration}};
    events.push_back(std::move(event));
  }
  return traceDocument(std::move(events), {{trace.process, dropped}}).dump();
}

Status writeChromeTrace(const Trace& trace, const std::string& path) {
  return writeFileAtomically(path, chromeTraceJson(trace));
}

Result<std::string> mergeChromeTraces(const std::vector<std::string>& paths) {
  json events = json::array();
  json dropped = json::object();
  std::map<int64_t, std::string> pid_owner;  // pid -> the file that holds it
  for (const std::string& path : paths) {
    Result<json> document = readTrace(path);
    if (!document) return document.status();
    std::map<int64_t, bool> seen_here;
    for (json& event : (*document)["traceEvents"]) {
      if (!event.is_object() || !event.contains("pid") || !event["pid"].is_number_integer()) {
        return makeStatus(StatusCode::kInvalidArgument, "{}: an event without an integer pid: {}", path,
                          event.dump().substr(0, 200));
      }
      const auto pid = event["pid"].get<int64_t>();
      if (!seen_here[pid]) {
        auto [owner, inserted] = pid_owner.emplace(pid, path);
        if (!inserted) {
          return makeStatus(StatusCode::kInvalidArgument, "{}: pid {} is also in {}, expected one file per worker",
                            path, pid, owner->second);
        }
        seen_here[pid] = true;
      }
      events.push_back(std::move(event));
    }
    const json& other = (*document)["otherData"];
    if (other.is_object() && other.contains("dropped_events") && other["dropped_events"].is_object()) {
      for (const auto& [process, count] : other["dropped_events"].items()) dropped[process] = count;
    }
  }
  return traceDocument(std::move(events), std::move(dropped)).dump();
}

Status mergeChromeTraceFiles(const std::vector<std::string>& inputs, const std::string& output) {
  Result<std::string> merged = mergeChromeTraces(inputs);
  if (!merged) return merged.status();
  return writeFileAtomically(output, *merged);
}

}  // namespace poseidon::trainer::timeline
