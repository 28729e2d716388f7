// The client side: proposes the run, drives every size and prints perftest's report.
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "tools/perf/bandwidth.h"
#include "tools/perf/console.h"
#include "tools/perf/latency.h"
#include "tools/perf/rendezvous.h"
#include "tools/perf/run.h"

namespace poseidon::perf {
namespace {

// Fails the run on both sides: the server, waiting for results, reports the cause too.
int failRun(Session& session, const Status& status) {
  (void)publishResults(session, nlohmann::json{{"error", status.toString()}}.dump());
  return reportFailure(status);
}

}  // namespace

RunParameters clientParameters(const Options& o) {
  RunParameters p;
  p.test = o.test;
  p.transport = o.transport;
  p.sizes = o.all_sizes ? allSizes() : std::vector<uint64_t>{o.size};
  p.iterations = o.iterations;
  p.duration_s = o.duration_s;
  p.margin_s = o.duration_s > 0 ? o.margin_s : 0;
  p.streams = o.streams;
  p.tx_depth = o.tx_depth;
  p.rx_depth = o.rx_depth;
  p.cq_mod = o.cq_mod;
  p.report_gbits = o.report_gbits;
  p.busy_poll = o.busy_poll;
  p.waiters_drive = o.progress != "engine";
  p.payload_crc = o.payload_crc != "off";
  p.encrypt_frames = o.encrypt == "on";
  return p;
}

int runClient(const Options& options) {
  const RunParameters params = clientParameters(options);
  if (const std::string error = checkParameters(params); !error.empty()) {
    return reportFailure(Status(StatusCode::kInvalidArgument, error));
  }
  auto connected = connectToServer(options, params);
  if (!connected) return reportFailure(connected.status());
  Session& session = **connected;
  const RunParameters& p = session.params;
  auto verb = makeVerb(p.test, session.pair(), session.data->region(), session.peer_data);
  if (const int64_t spin = options.spinNanos(p.test); spin >= 0) transport::Request::setSpinNanos(spin);

  printNow(testInfoBlock(p, session.side));
  if (isBandwidth(p.test) && p.durationMode()) printNow(" WARNING: BW peak won't be measured in this run.\n");
  printNow(tableHeader(p));
  std::optional<BandwidthClient> bandwidth;
  std::optional<LatencyClient> latency;
  if (isBandwidth(p.test)) {
    bandwidth.emplace(session, *verb);
  } else {
    latency.emplace(session, *verb);
  }
  auto measure = [&](uint64_t size) -> Result<Row> {
    if (latency) return latency->run(size);
    auto bw = bandwidth->run(size);
    if (!bw) return bw.status();
    return Row(*bw);
  };
  Report report{p, {}};
  for (uint64_t size : p.sizes) {
    const Result<Row> row = measure(size);
    if (!row) return failRun(session, row.status().withContext(fmt::format("{} of {} bytes", testName(p.test), size)));
    printNow(formatRow(row.value(), p.report_gbits));
    report.rows.push_back(row.value());
  }
  printNow(resultLine());

  if (!options.out_json.empty()) {
    if (Status st = writeReportFile(options.out_json, report); !st) return failRun(session, st);
  }
  if (Status st = publishResults(session, reportToJson(report).dump()); !st) return reportFailure(st);
  if (Status st = awaitConfirmation(session); !st) return reportFailure(st);
  return 0;
}

}  // namespace poseidon::perf
