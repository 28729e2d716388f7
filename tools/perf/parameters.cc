#include "tools/perf/parameters.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace poseidon::perf {

uint64_t RunParameters::maxSize() const { return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()); }

std::vector<uint64_t> allSizes() {
  std::vector<uint64_t> sizes;
  for (uint64_t size = 2; size <= kAllSizesMax; size *= 2) sizes.push_back(size);
  return sizes;
}

std::string checkParameters(const RunParameters& p) {
  if (p.transport != "tcp" && p.transport != "verbs") {
    return fmt::format("-t/--transport '{}': expected tcp or verbs (perftest's tx depth is --tx-depth here)",
                       p.transport);
  }
  if (p.sizes.empty() || p.sizes.size() > 64) {
    return fmt::format("message sizes: expected 1 to 64 sizes, got {}", p.sizes.size());
  }
  for (uint64_t size : p.sizes) {
    if (size < 1 || size > kMaxMessageBytes) {
      return fmt::format("-s/--size {}: expected a message size from 1 to {} bytes", size, kMaxMessageBytes);
    }
  }
  if (!p.durationMode() && (p.iterations < kMinIterations || p.iterations > kMaxIterations)) {
    return fmt::format("-n/--iters {}: expected a number of iterations from {} to {}", p.iterations, kMinIterations,
                       kMaxIterations);
  }
  if (p.duration_s < 0 || p.duration_s > kMaxDurationSeconds) {
    return fmt::format("-D/--duration {}: expected seconds from 1 to {}", p.duration_s, kMaxDurationSeconds);
  }
  if (p.durationMode() && (p.margin_s < 0 || p.duration_s <= 2 * p.margin_s)) {
    return fmt::format("-f/--margin {}: expected seconds from 0 to less than half of -D/--duration {}", p.margin_s,
                       p.duration_s);
  }
  if (p.streams < 1 || p.streams > kMaxStreams) {
    return fmt::format("-q/--qp {}: expected a number of streams from 1 to {}", p.streams, kMaxStreams);
  }
  if (p.tx_depth < 1 || p.tx_depth > kMaxTxDepth) {
    return fmt::format("--tx-depth {}: expected outstanding operations from 1 to {}", p.tx_depth, kMaxTxDepth);
  }
  if (p.rx_depth < 1 || p.rx_depth > kMaxRxDepth) {
    return fmt::format("-r/--rx-depth {}: expected posted receives from 1 to {}", p.rx_depth, kMaxRxDepth);
  }
  if (p.cq_mod < 1 || p.cq_mod > kMaxCqMod) {
    return fmt::format("-Q/--cq-mod {}: expected a completion interval from 1 to {}", p.cq_mod, kMaxCqMod);
  }
  return {};
}

std::string parametersToJson(const RunParameters& p) {
  nlohmann::json j = {
      {"version", kParametersVersion},
      {"test", testName(p.test)},
      {"transport", p.transport},
      {"sizes", p.sizes},
      {"iterations", p.iterations},
      {"duration_s", p.duration_s},
      {"margin_s", p.margin_s},
      {"streams", p.streams},
      {"tx_depth", p.tx_depth},
      {"rx_depth", p.rx_depth},
      {"cq_mod", p.cq_mod},
      {"report_gbits", p.report_gbits},
      {"busy_poll", p.busy_poll},
      {"waiters_drive", p.waiters_drive},
      {"payload_crc", p.payload_crc},
      {"encrypt_frames", p.encrypt_frames},
      {"server_address", p.server_address},
  };
  return j.dump();
}

Result<RunParameters> parametersFromJson(const std::string& text) {
  RunParameters p;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    const int version = j.at("version").get<int>();
    if (version != kParametersVersion) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "the client speaks parameters version {}, this server version {}; run the same "
                        "poseidon-perf on both sides",
                        version, kParametersVersion);
    }
    const std::string test = j.at("test").get<std::string>();
    const auto kind = parseTestName(test);
    if (!kind) {
      return makeStatus(StatusCode::kInvalidArgument, "test '{}': expected one of {}", test, kTestNames);
    }
    p.test = *kind;
    p.transport = j.at("transport").get<std::string>();
    p.sizes = j.at("sizes").get<std::vector<uint64_t>>();
    p.iterations = j.at("iterations").get<uint64_t>();
    p.duration_s = j.at("duration_s").get<int>();
    p.margin_s = j.at("margin_s").get<int>();
    p.streams = j.at("streams").get<int>();
    p.tx_depth = j.at("tx_depth").get<int>();
    p.rx_depth = j.at("rx_depth").get<int>();
    p.cq_mod = j.at("cq_mod").get<int>();
    p.report_gbits = j.at("report_gbits").get<bool>();
    p.busy_poll = j.at("busy_poll").get<bool>();
    p.waiters_drive = j.at("waiters_drive").get<bool>();
    p.payload_crc = j.at("payload_crc").get<bool>();
    p.encrypt_frames = j.at("encrypt_frames").get<bool>();
    p.server_address = j.at("server_address").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return makeStatus(StatusCode::kProtocolError, "the client's parameters do not parse: {}", e.what());
  }
  if (const std::string error = checkParameters(p); !error.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "the client's parameters are out of range: {}", error);
  }
  return p;
}

}  // namespace poseidon::perf
