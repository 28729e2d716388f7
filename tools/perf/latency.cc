#include "tools/perf/latency.h"

#include "tools/perf/parameters.h"
#include "tools/perf/statistics.h"

namespace poseidon::perf {
namespace {

using transport::RequestPtr;

// Both sides lay their region out as [outgoing | incoming], each slot as large as the largest
// message: a ping goes from the client's outgoing slot to the server's incoming one, and back.
uint64_t outgoing() { return 0; }
uint64_t incoming(const RunParameters& p) { return p.maxSize(); }

}  // namespace

LatencyClient::LatencyClient(Session& session, Verb& verb) : session_(session), verb_(verb) {
  if (!session.params.durationMode()) post_times_.resize(session.params.iterations);
}

// One ping-pong; `post_time` is when the ping was posted.
Status LatencyClient::roundTrip(uint64_t index, uint64_t size, int64_t& post_time) {
  const RunParameters& p = session_.params;
  // The pong's receive is posted first, so the server never waits for room to answer.
  RequestPtr pong = verb_.expect(incoming(p), size);
  post_time = nowNanos();
  RequestPtr ping = verb_.post(outgoing(), incoming(p), size, immFor(index));
  POSEIDON_RETURN_IF_ERROR(pong->wait(session_.deadline()));
  if (verb_.isMarker(*pong)) {
    return makeStatus(StatusCode::kProtocolError, "the server answered ping {} with an end marker", index);
  }
  return ping->wait(session_.deadline());
}

Result<Row> LatencyClient::run(uint64_t size) {
  const RunParameters& p = session_.params;
  if (p.durationMode()) return runTimed(size);
  for (uint64_t i = 0; i < p.iterations; ++i) POSEIDON_RETURN_IF_ERROR(roundTrip(i, size, post_times_[i]));
  return Row(LatRow{size, p.iterations, latencyStats(post_times_)});
}

Result<Row> LatencyClient::runTimed(uint64_t size) {
  const RunParameters& p = session_.params;
  const int64_t start = nowNanos();
  const int64_t open = start + p.margin_s * kNanosPerSecond;
  const int64_t close = start + (p.duration_s - p.margin_s) * kNanosPerSecond;
  const int64_t stop = start + p.duration_s * kNanosPerSecond;
  // The window runs from the first ping posted after `open` to the end of the last round trip
  // that started before `close`.
  int64_t window_start = 0;
  int64_t window_end = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t i = 0;
  int64_t finished = 0;  // when the latest round trip ended
  for (; (finished = nowNanos()) < stop; ++i) {
    if (window_end == 0 && finished >= close) {
      window_end = finished;
      last = i;
    }
    int64_t posted = 0;
    POSEIDON_RETURN_IF_ERROR(roundTrip(i, size, posted));
    if (window_start == 0 && posted >= open) {
      window_start = posted;
      first = i;
    }
  }
  if (window_end == 0) {  // no margin: the window closes with the run
    window_end = finished;
    last = i;
  }
  RequestPtr marker = verb_.post(outgoing(), incoming(p), 0, kMarkerImm);
  POSEIDON_RETURN_IF_ERROR(marker->wait(session_.deadline()));
  if (window_end == 0 || last <= first) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "no round trip completed between {} s and {} s ({} in all): give a longer "
                      "-D/--duration",
                      p.margin_s, p.duration_s - p.margin_s, i);
  }
  const uint64_t trips = last - first;
  const double span = static_cast<double>(window_end - window_start);
  return Row(LatDurationRow{size, trips, span / static_cast<double>(trips) / 2 / 1000,
                            static_cast<double>(trips) / (span / kNanosPerSecond)});
}

Status LatencyServer::run(uint64_t size) {
  const RunParameters& p = session_.params;
  const bool timed = p.durationMode();
  RequestPtr ping = verb_.expect(incoming(p), size);
  for (uint64_t i = 0; timed || i < p.iterations; ++i) {
    POSEIDON_RETURN_IF_ERROR(ping->wait(session_.deadline()));
    if (verb_.isMarker(*ping)) {
      if (timed) return Status::ok();
      return makeStatus(StatusCode::kProtocolError, "the client ended the run after {} of {} pings", i, p.iterations);
    }
    // The next ping's receive goes out before the pong, so the client never waits for room.
    RequestPtr next = timed || i + 1 < p.iterations ? verb_.expect(incoming(p), size) : nullptr;
    RequestPtr pong = verb_.post(outgoing(), incoming(p), size, immFor(i));
    POSEIDON_RETURN_IF_ERROR(pong->wait(session_.deadline()));
    ping = std::move(next);
  }
  return Status::ok();
}

}  // namespace poseidon::perf
