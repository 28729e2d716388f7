// The server side: waits for one client, follows its parameters, serves every size and prints
// the client's results, so both sides show the same table.
#include <fmt/format.h>

#include <cstdio>

#include "tools/perf/bandwidth.h"
#include "tools/perf/console.h"
#include "tools/perf/latency.h"
#include "tools/perf/rendezvous.h"
#include "tools/perf/run.h"

namespace poseidon::perf {
namespace {

void printWaiting(uint16_t /*port*/) {
  printNow(
      "\n************************************\n"
      "* Waiting for client to connect... *\n"
      "************************************\n");
}

// perftest's server simply follows the client; say so where this one was told otherwise.
void noteDifferences(const Options& o, const RunParameters& p) {
  auto note = [](const std::string& what, const std::string& client, const std::string& own) {
    if (client != own) {
      fmt::print(stderr, "poseidon-perf: following the client: {} {} (this server was given {})\n", what, client, own);
    }
  };
  if (o.test_given) note("test", testName(p.test), testName(o.test));
  if (o.transport_given) note("-t/--transport", p.transport, o.transport);
  if (o.streams_given) note("-q/--qp", std::to_string(p.streams), std::to_string(o.streams));
  if (o.tx_depth_given) note("--tx-depth", std::to_string(p.tx_depth), std::to_string(o.tx_depth));
  if (o.size_given) note("-s/--size", std::to_string(p.maxSize()), std::to_string(o.size));
  if (o.iterations_given) note("-n/--iters", std::to_string(p.iterations), std::to_string(o.iterations));
  if (o.gid_index >= 0 && p.transport != "verbs") {
    fmt::print(stderr, "poseidon-perf: -x/--gid-index {} is for verbs; the client chose {}, so it does not apply\n",
               o.gid_index, p.transport);
  }
}

}  // namespace

int runServer(const Options& options) {
  auto accepted = acceptClient(options, &printWaiting);
  if (!accepted) return reportFailure(accepted.status());
  Session& session = **accepted;
  const RunParameters& p = session.params;
  noteDifferences(options, p);
  auto verb = makeVerb(p.test, session.pair(), session.data->region(), session.peer_data);
  if (const int64_t spin = options.spinNanos(p.test); spin >= 0) transport::Request::setSpinNanos(spin);

  SideInfo side = session.side;
  side.server = true;
  printNow(testInfoBlock(p, side));
  if (isBandwidth(p.test)) {
    BandwidthServer bandwidth(session, *verb);
    for (uint64_t size : p.sizes) {
      if (Status st = bandwidth.run(size); !st) {
        return reportFailure(st.withContext(fmt::format("{} of {} bytes", testName(p.test), size)));
      }
    }
  } else {
    LatencyServer latency(session, *verb);
    for (uint64_t size : p.sizes) {
      if (Status st = latency.run(size); !st) {
        return reportFailure(st.withContext(fmt::format("{} of {} bytes", testName(p.test), size)));
      }
    }
  }

  auto text = awaitResults(session);
  if (!text) return reportFailure(text.status());
  auto rows = rowsFromJson(*text, p);
  if (!rows) return reportFailure(rows.status());
  Report report{p, std::move(*rows)};
  if (isBandwidth(p.test) && p.durationMode()) printNow(" WARNING: BW peak won't be measured in this run.\n");
  printNow(tableHeader(p));
  for (const Row& row : report.rows) printNow(formatRow(row, p.report_gbits));
  printNow(resultLine());
  if (!options.out_json.empty()) {
    if (Status st = writeReportFile(options.out_json, report); !st) return reportFailure(st);
  }
  if (Status st = confirmResults(session); !st) return reportFailure(st);
  return 0;
}

}  // namespace poseidon::perf
