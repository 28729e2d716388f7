// Report formatting: perftest's header block and result tables, byte for byte where perftest
// has an equivalent (formats taken from perftest 4.5's RESULT_FMT*/REPORT_FMT*), so a column of
// poseidon-perf lines up with the same column of ib_write_bw; and the same rows as JSON.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tools/perf/link_info.h"
#include "tools/perf/parameters.h"
#include "tools/perf/statistics.h"

namespace poseidon::perf {

// Units as perftest: "MB/sec" is MiB/s (format_factor 0x100000 = 2^20 bytes); "Gb/sec" with
// --report_gbits is 10^9 bits/s (format_factor 125000000 bytes). MsgRate is 10^6 messages/s.
inline constexpr double kBytesPerMB = 1048576.0;
inline constexpr double kBytesPerGb = 125000000.0;

// One row of a bandwidth table, in the table's units.
struct BwRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  double bw_peak = 0;
  double bw_average = 0;
  double msg_rate = 0;  // Mpps
};
// A latency row (iteration mode), in usec.
struct LatRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  LatencyStats stats;
};
// A latency row of a -D run: perftest's print_report_lat_duration.
struct LatDurationRow {
  uint64_t bytes = 0;
  uint64_t iterations = 0;
  double t_avg = 0;  // usec, one-way
  double tps = 0;    // round trips per second
};
using Row = std::variant<BwRow, LatRow, LatDurationRow>;

// `seconds` of measured time for `iterations` messages of `bytes`; `peak_ops_per_s` from
// peakOpsPerSecond (0 when none).
BwRow makeBwRow(uint64_t bytes, uint64_t iterations, double seconds, double peak_ops_per_s, bool gbits);

struct Report {
  RunParameters params;
  std::vector<Row> rows;
};

// What the header block says about this side.
struct SideInfo {
  bool server = false;
  std::string device;          // "tcp 127.0.0.1"
  std::string local_address;   // the device's listening address
  std::string remote_address;  // the peer as the transport names it
  LinkInfo link;               // after connecting
};

std::string resultLine();  // perftest's RESULT_LINE, with its newline
std::string testInfoBlock(const RunParameters& params, const SideInfo& side);
std::string tableHeader(const RunParameters& params);  // with its newline
std::string formatRow(const Row& row, bool gbits);     // with its newline

// {"tool", "test", "transport", "streams", "tx_depth", ..., "bw_unit", "rows": [...]}; the
// rows carry the table's fields under the names of its columns.
nlohmann::json reportToJson(const Report& report);
// Writes reportToJson() to `path`, naming the file when it cannot.
Status writeReportFile(const std::string& path, const Report& report);

// The rows of a reportToJson() text for a run of `params`, every field checked (the JSON comes
// from the peer).
Result<std::vector<Row>> rowsFromJson(const std::string& text, const RunParameters& params);

}  // namespace poseidon::perf
