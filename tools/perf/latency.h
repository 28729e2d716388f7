// The latency tests (ib_send_lat, ib_write_lat): ping-pong, perftest style. The client posts
// its receive (or write notification) for the pong, notes the time and sends the ping; the
// server answers each ping with a pong of the same size (writes are noticed through their
// immediates, where perftest polls the last byte). Iteration mode reports perftest's latency
// table from the gaps between consecutive pings (one round trip each, halved); duration mode
// (-D) counts round trips inside [margin, D - margin] and reports their mean and rate, and
// ends the server's loop with a zero-length marker.
#pragma once

#include <cstdint>
#include <vector>

#include "tools/perf/rendezvous.h"
#include "tools/perf/report.h"
#include "tools/perf/verb.h"

namespace poseidon::perf {

class LatencyClient {
 public:
  LatencyClient(Session& session, Verb& verb);
  Result<Row> run(uint64_t size);

 private:
  Status roundTrip(uint64_t index, uint64_t size, int64_t& post_time);
  Result<Row> runTimed(uint64_t size);

  Session& session_;
  Verb& verb_;
  std::vector<int64_t> post_times_;
};

class LatencyServer {
 public:
  LatencyServer(Session& session, Verb& verb) : session_(session), verb_(verb) {}
  Status run(uint64_t size);

 private:
  Session& session_;
  Verb& verb_;
};

}  // namespace poseidon::perf
