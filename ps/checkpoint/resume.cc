#include "ps/checkpoint/resume.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "transport/bootstrap/store_view.h"

namespace poseidon::ps {

namespace {

// "<job>/checkpoints/<server>": the clocks each server has a complete checkpoint of.
transport::bootstrap::StoreView clocksOf(transport::bootstrap::Store& store, const PsJob& job) {
  return transport::bootstrap::StoreView(store, job.name).child("checkpoints");
}

Result<std::vector<uint64_t>> parseClocks(const std::string& key, const std::string& text) {
  std::vector<uint64_t> clocks;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    uint64_t clock = 0;
    const auto [stop, error] = std::from_chars(text.data() + at, text.data() + end, clock);
    if (error != std::errc() || stop != text.data() + end || end == at) {
      return makeStatus(StatusCode::kProtocolError, "store key {} holds '{}', not a list of clocks", key, text);
    }
    clocks.push_back(clock);
    at = end + 1;
  }
  return clocks;
}

// "server 0 has clocks 18-20, server 1 has none": a run of consecutive clocks as a range.
std::string describeClocks(const std::vector<std::vector<uint64_t>>& published) {
  std::vector<std::string> parts;
  for (size_t server = 0; server < published.size(); ++server) {
    const std::vector<uint64_t>& clocks = published[server];
    if (clocks.empty()) {
      parts.push_back(fmt::format("server {} has none", server));
      continue;
    }
    std::vector<std::string> runs;
    for (size_t first = 0; first < clocks.size();) {
      size_t last = first;
      while (last + 1 < clocks.size() && clocks[last + 1] == clocks[last] + 1) ++last;
      runs.push_back(last == first ? std::to_string(clocks[first]) : fmt::format("{}-{}", clocks[first], clocks[last]));
      first = last + 1;
    }
    parts.push_back(
        fmt::format("server {} has clock{} {}", server, clocks.size() == 1 ? "" : "s", fmt::join(runs, ",")));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

Status publishCheckpointClocks(transport::bootstrap::Store& store, const PsJob& job, int server,
                               const std::vector<uint64_t>& clocks) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  return transport::bootstrap::setString(clocks_of, std::to_string(server), fmt::format("{}", fmt::join(clocks, ",")));
}

Result<uint64_t> agreeResumeClock(transport::bootstrap::Store& store, const PsJob& job, Deadline deadline) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  std::vector<std::vector<uint64_t>> published;
  for (int server = 0; server < job.servers; ++server) {
    auto text = transport::bootstrap::getString(clocks_of, std::to_string(server), deadline);
    if (!text) return text.status();
    auto clocks = parseClocks(clocks_of.key(std::to_string(server)), *text);
    if (!clocks) return clocks.status();
    std::sort(clocks->begin(), clocks->end());
    published.push_back(std::move(*clocks));
  }
  if (published.empty()) return uint64_t{0};
  std::vector<uint64_t> common = published.front();
  for (const std::vector<uint64_t>& clocks : published) {
    std::vector<uint64_t> both;
    std::set_intersection(common.begin(), common.end(), clocks.begin(), clocks.end(), std::back_inserter(both));
    common = std::move(both);
  }
  if (!common.empty()) return common.back();
  const bool none = std::all_of(published.begin(), published.end(), [](const auto& clocks) { return clocks.empty(); });
  if (none) return uint64_t{0};
  // Some server has checkpoints but no clock is in all of them: no state of the job as a whole was
  // saved. Starting from clock 0 would quietly throw away what there is, so say what each has.
  return makeStatus(StatusCode::kInvalidArgument,
                    "no checkpoint clock is common to every server, so the job cannot resume: {}; start without "
                    "resuming to train from clock 0, or give every server its checkpoints of one clock",
                    describeClocks(published));
}

}  // namespace poseidon::ps
