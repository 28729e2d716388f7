#include "ps/checkpoint/resume.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <string>

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

}  // namespace

Status publishCheckpointClocks(transport::bootstrap::Store& store, const PsJob& job, int server,
                               const std::vector<uint64_t>& clocks) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  return transport::bootstrap::setString(clocks_of, std::to_string(server), fmt::format("{}", fmt::join(clocks, ",")));
}

Result<uint64_t> agreeResumeClock(transport::bootstrap::Store& store, const PsJob& job, Deadline deadline) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  std::vector<uint64_t> common;
  for (int server = 0; server < job.servers; ++server) {
    auto text = transport::bootstrap::getString(clocks_of, std::to_string(server), deadline);
    if (!text) return text.status();
    auto clocks = parseClocks(clocks_of.key(std::to_string(server)), *text);
    if (!clocks) return clocks.status();
    std::sort(clocks->begin(), clocks->end());
    if (server == 0) {
      common = std::move(*clocks);
    } else {
      std::vector<uint64_t> both;
      std::set_intersection(common.begin(), common.end(), clocks->begin(), clocks->end(), std::back_inserter(both));
      common = std::move(both);
    }
  }
  return common.empty() ? uint64_t{0} : common.back();
}

}  // namespace poseidon::ps
