#include "ps/checkpoint/resume.h"

#include <fmt/format.h>
#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::ps {

namespace {

// "<job>/checkpoints/<server>": "resume;<clocks>;<dir>" or "fresh;<clocks>;<dir>", the clocks
// comma-separated. The directory comes last: a path may hold ';' and ','.
// "<job>/checkpoints/worker-<w>": "any", or "only;<clocks>".
transport::bootstrap::StoreView clocksOf(transport::bootstrap::Store& store, const PsJob& job) {
  return transport::bootstrap::StoreView(store, job.name).child("checkpoints");
}

// A store value in a message: another rank wrote it, and it may be up to 64 MiB of anything.
std::string shownInPart(std::string_view value) {
  constexpr size_t kShown = 200;
  if (value.size() <= kShown) return fmt::format("'{}'", value);
  return fmt::format("'{}...' ({} bytes)", value.substr(0, kShown), value.size());
}

Result<std::vector<uint64_t>> parseClocks(const std::string& key, const std::string& value, std::string_view text) {
  std::vector<uint64_t> clocks;
  for (std::string_view item : splitListOrNone(text)) {  // none: a rank that holds no checkpoint
    uint64_t clock = 0;
    const auto [stop, error] = std::from_chars(item.data(), item.data() + item.size(), clock);
    if (error != std::errc() || stop != item.data() + item.size() || item.empty()) {
      return makeStatus(StatusCode::kProtocolError, "store key {} holds {}: {} is not a list of clocks", key,
                        shownInPart(value), shownInPart(text));
    }
    clocks.push_back(clock);
  }
  return clocks;
}

Result<HeldCheckpoints> parseHeld(const std::string& key, const std::string& value) {
  const size_t mode_end = value.find(';');
  const size_t clocks_end = mode_end == std::string::npos ? std::string::npos : value.find(';', mode_end + 1);
  if (clocks_end == std::string::npos) {
    return makeStatus(StatusCode::kProtocolError,
                      "store key {} holds {}, expected 'resume;<clocks>;<dir>' or "
                      "'fresh;<clocks>;<dir>'",
                      key, shownInPart(value));
  }
  const std::string_view mode = std::string_view(value).substr(0, mode_end);
  if (mode != "resume" && mode != "fresh") {
    return makeStatus(StatusCode::kProtocolError, "store key {} holds {}: {} is neither resume nor fresh", key,
                      shownInPart(value), shownInPart(mode));
  }
  auto clocks = parseClocks(key, value, std::string_view(value).substr(mode_end + 1, clocks_end - mode_end - 1));
  if (!clocks) return clocks.status();
  std::sort(clocks->begin(), clocks->end());
  return HeldCheckpoints{mode == "resume", std::move(*clocks), value.substr(clocks_end + 1)};
}

// A worker's entry: nullopt for "any".
Result<std::optional<std::vector<uint64_t>>> parseWorkerClocks(const std::string& key, const std::string& value) {
  if (value == "any") return std::optional<std::vector<uint64_t>>();
  constexpr std::string_view kOnly = "only;";
  if (!value.starts_with(kOnly)) {
    return makeStatus(StatusCode::kProtocolError, "store key {} holds {}, expected 'any' or 'only;<clocks>'", key,
                      shownInPart(value));
  }
  auto clocks = parseClocks(key, value, std::string_view(value).substr(kOnly.size()));
  if (!clocks) return clocks.status();
  std::sort(clocks->begin(), clocks->end());
  return std::optional<std::vector<uint64_t>>(std::move(*clocks));
}

// "18-20", "4,8-10": runs of consecutive clocks as ranges.
std::string describeRuns(const std::vector<uint64_t>& clocks) {
  std::vector<std::string> runs;
  for (size_t first = 0; first < clocks.size();) {
    size_t last = first;
    while (last + 1 < clocks.size() && clocks[last + 1] == clocks[last] + 1) ++last;
    runs.push_back(last == first ? std::to_string(clocks[first]) : fmt::format("{}-{}", clocks[first], clocks[last]));
    first = last + 1;
  }
  return fmt::format("{}", fmt::join(runs, ","));
}

// "server 0 has clocks 18-20", "worker 2 from none": who, and the clocks it holds or takes.
std::string describeHolding(const std::string& who, std::string_view verb, const std::vector<uint64_t>& clocks) {
  if (clocks.empty()) return fmt::format("{} {} none", who, verb);
  return fmt::format("{} {} clock{} {}", who, verb, clocks.size() == 1 ? "" : "s", describeRuns(clocks));
}

// "server 0 has clocks 18-20, server 1 has none".
std::string describeClocks(const std::vector<HeldCheckpoints>& published) {
  std::vector<std::string> parts;
  for (size_t server = 0; server < published.size(); ++server) {
    const HeldCheckpoints& held = published[server];
    const bool idle = held.clocks.empty() && !held.resume;
    parts.push_back(describeHolding(fmt::format("server {}", server), "has", held.clocks) +
                    (idle ? " (not resuming)" : ""));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

// "worker 1 from clocks 3,6, worker 2 from none" (workers that take any clock left out).
std::string describeWorkerClocks(const std::vector<std::optional<std::vector<uint64_t>>>& workers) {
  std::vector<std::string> parts;
  for (size_t worker = 0; worker < workers.size(); ++worker) {
    if (workers[worker]) parts.push_back(describeHolding(fmt::format("worker {}", worker), "from", *workers[worker]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::vector<uint64_t> intersect(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return both;
}

// The servers started fresh beside an earlier run's checkpoints, each with its directory.
Status refuseFreshStartsBesideCheckpoints(const std::vector<HeldCheckpoints>& published) {
  std::vector<std::string> fresh;
  for (size_t server = 0; server < published.size(); ++server) {
    const HeldCheckpoints& held = published[server];
    if (held.resume || held.clocks.empty()) continue;
    fresh.push_back(fmt::format("server {}'s directory '{}' holds its checkpoint{} of clock{} {}", server, held.dir,
                                held.clocks.size() == 1 ? "" : "s", held.clocks.size() == 1 ? "" : "s",
                                describeRuns(held.clocks)));
  }
  if (fresh.empty()) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument,
                    "started without resuming, but {}, of an earlier run; resume to go on from them, or remove them "
                    "(server-<s>.clock-<T>.ckpt) or give the servers empty directories to train from clock 0 (a run "
                    "beside them could later resume into a mix of the two runs)",
                    fmt::join(fresh, "; "));
}

}  // namespace

Status publishCheckpointClocks(transport::bootstrap::Store& store, const PsJob& job, int server,
                               const HeldCheckpoints& held) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  return transport::bootstrap::setString(
      clocks_of, std::to_string(server),
      fmt::format("{};{};{}", held.resume ? "resume" : "fresh", fmt::join(held.clocks, ","), held.dir));
}

Status publishWorkerResumeClocks(transport::bootstrap::Store& store, const PsJob& job, int worker,
                                 const std::optional<std::vector<uint64_t>>& clocks) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  return transport::bootstrap::setString(clocks_of, fmt::format("worker-{}", worker),
                                         clocks ? fmt::format("only;{}", fmt::join(*clocks, ",")) : "any");
}

Result<uint64_t> agreeResumeClock(transport::bootstrap::Store& store, const PsJob& job, Deadline deadline) {
  transport::bootstrap::StoreView clocks_of = clocksOf(store, job);
  std::vector<HeldCheckpoints> published;
  for (int server = 0; server < job.servers; ++server) {
    auto text = transport::bootstrap::getString(clocks_of, std::to_string(server), deadline);
    if (!text) return text.status();
    auto held = parseHeld(clocks_of.key(std::to_string(server)), *text);
    if (!held) return held.status();
    published.push_back(std::move(*held));
  }
  POSEIDON_RETURN_IF_ERROR(refuseFreshStartsBesideCheckpoints(published));
  std::vector<std::optional<std::vector<uint64_t>>> workers;
  for (int worker = 0; worker < job.workers; ++worker) {
    const std::string key = fmt::format("worker-{}", worker);
    auto text = transport::bootstrap::getString(clocks_of, key, deadline);
    if (!text) return text.status();
    auto clocks = parseWorkerClocks(clocks_of.key(key), *text);
    if (!clocks) return clocks.status();
    workers.push_back(std::move(*clocks));
  }
  if (published.empty()) return uint64_t{0};
  std::vector<uint64_t> common = published.front().clocks;
  for (const HeldCheckpoints& held : published) common = intersect(common, held.clocks);
  if (!common.empty()) {
    std::vector<uint64_t> every_worker = common;
    for (const auto& clocks : workers) {
      if (clocks) every_worker = intersect(every_worker, *clocks);
    }
    if (!every_worker.empty()) return every_worker.back();
    // The servers saved the job, but some worker lacks its own part of every such clock: resuming
    // would start that worker without it.
    return makeStatus(StatusCode::kInvalidArgument,
                      "no checkpoint clock every server has is one every worker can resume from, so the job cannot "
                      "resume: {}; {}; give each worker its checkpoint of one of the servers' clocks, or remove the "
                      "checkpoints to train from clock 0",
                      describeClocks(published), describeWorkerClocks(workers));
  }
  const bool none =
      std::all_of(published.begin(), published.end(), [](const HeldCheckpoints& held) { return held.clocks.empty(); });
  if (none) return uint64_t{0};
  // Some server has checkpoints but no clock is in all of them: no state of the job as a whole was
  // saved. Starting from clock 0 would quietly throw away what there is, so say what each has.
  return makeStatus(StatusCode::kInvalidArgument,
                    "no checkpoint clock is common to every server, so the job cannot resume: {}; remove the "
                    "servers' checkpoints to train from clock 0, or give every server its checkpoints of one clock",
                    describeClocks(published));
}

Result<std::vector<uint64_t>> parseClockList(const std::string& key, std::string_view value) {
  auto clocks = parseClocks(key, std::string(value), value);
  if (!clocks) return clocks.status();
  std::sort(clocks->begin(), clocks->end());
  return clocks;
}

}  // namespace poseidon::ps
