#include "tools/perf/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace poseidon::perf {
namespace {

// perftest 4.5's formats (perftest_parameters.h), kept verbatim.
constexpr const char* kResultLine =
    "---------------------------------------------------------------------------------------\n";
constexpr const char* kResultFmt = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
constexpr const char* kResultFmtG =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
constexpr const char* kResultFmtLat =
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% "
    "percentile[usec]   99.9% percentile[usec] \n";
constexpr const char* kResultFmtLatDur = " #bytes        #iterations       t_avg[usec]    tps average\n";
constexpr const char* kReportFmt = " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n";
// perftest switches to this one in Gb/sec when the average is below 0.1.
constexpr const char* kReportFmtExt = " %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf\n";
constexpr const char* kReportFmtLat =
    " %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n";
constexpr const char* kReportFmtLatDur = " %-7lu       %lu            %-7.2f        %-7.2f\n";

template <typename... Args>
std::string printfString(const char* format, Args... args) {
  char buffer[512];
  const int n = std::snprintf(buffer, sizeof(buffer), format, args...);
  return std::string(buffer, n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof(buffer) - 1));
}

std::string rowKind(const RunParameters& p) {
  if (isBandwidth(p.test)) return "bw";
  return p.durationMode() ? "lat_duration" : "lat";
}

const char* bwUnit(bool gbits) { return gbits ? "Gb/sec" : "MB/sec"; }

nlohmann::json rowToJson(const Row& row) {
  if (const auto* bw = std::get_if<BwRow>(&row)) {
    return {{"bytes", bw->bytes},
            {"iterations", bw->iterations},
            {"bw_peak", bw->bw_peak},
            {"bw_average", bw->bw_average},
            {"msg_rate_mpps", bw->msg_rate}};
  }
  if (const auto* lat = std::get_if<LatRow>(&row)) {
    const LatencyStats& s = lat->stats;
    return {{"bytes", lat->bytes},           {"iterations", lat->iterations},
            {"t_min_usec", s.t_min},         {"t_max_usec", s.t_max},
            {"t_typical_usec", s.t_typical}, {"t_avg_usec", s.t_avg},
            {"t_stdev_usec", s.t_stdev},     {"p99_usec", s.p99},
            {"p99_9_usec", s.p99_9}};
  }
  const auto& dur = std::get<LatDurationRow>(row);
  return {{"bytes", dur.bytes}, {"iterations", dur.iterations}, {"t_avg_usec", dur.t_avg}, {"tps_average", dur.tps}};
}

// A finite, non-negative number (NaN and infinities cannot travel in JSON anyway).
double number(const nlohmann::json& j, const char* key) {
  const double value = j.at(key).get<double>();
  if (!std::isfinite(value) || value < 0) {
    throw std::out_of_range(fmt::format("row field '{}' is {}, expected a finite number >= 0", key, value));
  }
  return value;
}

Row rowFromJson(const nlohmann::json& j, const std::string& kind) {
  const uint64_t bytes = j.at("bytes").get<uint64_t>();
  const uint64_t iterations = j.at("iterations").get<uint64_t>();
  if (kind == "bw") {
    return BwRow{bytes, iterations, number(j, "bw_peak"), number(j, "bw_average"), number(j, "msg_rate_mpps")};
  }
  if (kind == "lat") {
    LatencyStats s;
    s.t_min = number(j, "t_min_usec");
    s.t_max = number(j, "t_max_usec");
    s.t_typical = number(j, "t_typical_usec");
    s.t_avg = number(j, "t_avg_usec");
    s.t_stdev = number(j, "t_stdev_usec");
    s.p99 = number(j, "p99_usec");
    s.p99_9 = number(j, "p99_9_usec");
    return LatRow{bytes, iterations, s};
  }
  return LatDurationRow{bytes, iterations, number(j, "t_avg_usec"), number(j, "tps_average")};
}

}  // namespace

BwRow makeBwRow(uint64_t bytes, uint64_t iterations, double seconds, double peak_ops_per_s, bool gbits) {
  const double unit = gbits ? kBytesPerGb : kBytesPerMB;
  BwRow row;
  row.bytes = bytes;
  row.iterations = iterations;
  if (seconds > 0) {
    row.bw_average = static_cast<double>(iterations) * static_cast<double>(bytes) / seconds / unit;
    row.msg_rate = static_cast<double>(iterations) / seconds / 1e6;
  }
  row.bw_peak = peak_ops_per_s * static_cast<double>(bytes) / unit;
  return row;
}

std::string resultLine() { return kResultLine; }

std::string testInfoBlock(const RunParameters& p, const SideInfo& side) {
  const bool tcp = p.transport == "tcp";
  std::string out = kResultLine;
  out += fmt::format("                    {}\n", testTitle(p.test));
  out += fmt::format(" Dual-port       : OFF\t\tDevice         : {}\n", side.device);
  out += fmt::format(" Number of qps   : {}\t\tTransport type : {}\n", p.streams, tcp ? "TCP" : "IB");
  out += fmt::format(" Connection type : {}\t\tUsing SRQ      : OFF\n", tcp ? "TCP" : "RC");
  if (!side.server) out += fmt::format(" TX depth        : {}\n", isBandwidth(p.test) ? p.tx_depth : 1);
  if (side.server && isBandwidth(p.test)) out += fmt::format(" RX depth        : {}\n", p.rx_depth);
  if (isBandwidth(p.test)) out += fmt::format(" CQ Moderation   : {}\n", p.cq_mod);
  const LinkInfo& link = side.link;
  out += link.mtu_bytes > 0 ? fmt::format(" Mtu             : {}[B]\n", link.mtu_bytes) : " Mtu             : n/a\n";
  out += fmt::format(" Link type       : {}\n", link.link_type.empty() ? (tcp ? "IP" : "n/a") : link.link_type);
  if (link.gid_index >= 0) out += fmt::format(" GID index       : {}\n", link.gid_index);
  out += " Max inline data : 0[B]\n";
  out += " rdma_cm QPs\t : OFF\n";
  out += " Data ex. method : TCP store\n";
  if (p.durationMode())
    out += fmt::format(" Duration        : {} s, measured after a margin of {} s\n", p.duration_s, p.margin_s);
  out += kResultLine;
  out += fmt::format(" local address: {}\n", side.local_address);
  if (!link.gid.empty()) out += fmt::format(" GID: {}\n", link.gid);
  out += fmt::format(" remote address: {}\n", side.remote_address);
  out += kResultLine;
  return out;
}

std::string tableHeader(const RunParameters& p) {
  if (isBandwidth(p.test)) return p.report_gbits ? kResultFmtG : kResultFmt;
  return p.durationMode() ? kResultFmtLatDur : kResultFmtLat;
}

std::string formatRow(const Row& row, bool gbits) {
  if (const auto* bw = std::get_if<BwRow>(&row)) {
    const bool extended = gbits && bw->bw_average < 0.1;
    return printfString(extended ? kReportFmtExt : kReportFmt, static_cast<unsigned long>(bw->bytes),
                        static_cast<unsigned long>(bw->iterations), bw->bw_peak, bw->bw_average, bw->msg_rate);
  }
  if (const auto* lat = std::get_if<LatRow>(&row)) {
    const LatencyStats& s = lat->stats;
    return printfString(kReportFmtLat, static_cast<unsigned long>(lat->bytes),
                        static_cast<unsigned long>(lat->iterations), s.t_min, s.t_max, s.t_typical, s.t_avg, s.t_stdev,
                        s.p99, s.p99_9);
  }
  const auto& dur = std::get<LatDurationRow>(row);
  return printfString(kReportFmtLatDur, static_cast<unsigned long>(dur.bytes),
                      static_cast<unsigned long>(dur.iterations), dur.t_avg, dur.tps);
}

nlohmann::json reportToJson(const Report& report) {
  const RunParameters& p = report.params;
  nlohmann::json rows = nlohmann::json::array();
  for (const Row& row : report.rows) rows.push_back(rowToJson(row));
  nlohmann::json j = {
      {"tool", "poseidon-perf"},
      {"test", testName(p.test)},
      {"transport", p.transport},
      {"streams", p.streams},
      {"tx_depth", isBandwidth(p.test) ? p.tx_depth : 1},
      {"mode", p.durationMode() ? "duration" : "iterations"},
      {"row_kind", rowKind(p)},
      {"rows", rows},
  };
  if (p.durationMode()) {
    j["duration_s"] = p.duration_s;
    j["margin_s"] = p.margin_s;
  } else {
    j["iterations"] = p.iterations;
  }
  if (isBandwidth(p.test)) {
    j["rx_depth"] = p.rx_depth;
    j["cq_mod"] = p.cq_mod;
    j["bw_unit"] = bwUnit(p.report_gbits);
  } else {
    j["latency_unit"] = "usec";
  }
  return j;
}

Status writeReportFile(const std::string& path, const Report& report) {
  std::ofstream out(path, std::ios::trunc);
  out << reportToJson(report).dump(2) << '\n';
  out.close();
  if (!out) return makeStatus(StatusCode::kIoError, "cannot write the JSON report to '{}'", path);
  return Status::ok();
}

Result<std::vector<Row>> rowsFromJson(const std::string& text, const RunParameters& params) {
  std::vector<Row> rows;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.contains("error")) {
      return makeStatus(StatusCode::kUnavailable, "the client failed: {}", j.at("error").get<std::string>());
    }
    const std::string kind = j.at("row_kind").get<std::string>();
    if (kind != rowKind(params)) {
      return makeStatus(StatusCode::kProtocolError, "the client reported rows of kind '{}', expected '{}'", kind,
                        rowKind(params));
    }
    const nlohmann::json& list = j.at("rows");
    if (!list.is_array() || list.size() > params.sizes.size()) {
      return makeStatus(StatusCode::kProtocolError, "the client reported {} rows, expected at most {}", list.size(),
                        params.sizes.size());
    }
    for (const nlohmann::json& row : list) rows.push_back(rowFromJson(row, kind));
  } catch (const std::exception& e) {
    return makeStatus(StatusCode::kProtocolError, "the client's results do not parse: {}", e.what());
  }
  return rows;
}

}  // namespace poseidon::perf
