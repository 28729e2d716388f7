// A trace worker: the trace model's layers registered with the Session (buffers of the scaled
// shapes, filled with fixed values: the traffic and the timing are the point, not the numbers),
// then iterations in which every layer's compute is a sleep of its time and the gradients are
// reported as --schedule says. What each iteration cost is measured here.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "scheme/scheme.h"
#include "tools/trace/trace_options.h"
#include "trainer/api/session.h"
#include "trainer/wfbp/pipeline.h"

namespace poseidon::tools {

struct TraceIteration {
  double seconds = 0;          // from this iteration's first wait to the next one's
  double compute_seconds = 0;  // slept in forward and backward steps
  double wait_seconds = 0;     // in waitForParameters
  double idleShare() const;    // the part no compute ran: 1 - compute / seconds, in [0, 1]
};

// Bytes and syncs per scheme over the measured iterations (on_sync, the library's thread), and
// the measured syncs themselves (when each layer was reported, started and completed), kept in
// room reserved up front for `expected_records`.
class SchemeTraffic {
 public:
  SchemeTraffic(uint64_t first_measured, size_t expected_records) : first_measured_(first_measured) {
    records_.reserve(expected_records);
  }
  void add(const trainer::SyncRecord& record);
  struct Totals {
    uint64_t sent = 0, received = 0, syncs = 0;
  };
  Totals totals(scheme::Scheme s) const;
  std::vector<trainer::SyncRecord> records() const;

 private:
  uint64_t first_measured_;
  mutable std::mutex mutex_;
  std::array<Totals, 4> totals_{};
  std::vector<trainer::SyncRecord> records_;
};

// Registers the layers, starts the session, runs --warmup + --iterations iterations and finishes.
// Returns the measured iterations.
Result<std::vector<TraceIteration>> runTraceWorker(trainer::Session& session, const TraceCommandLine& c);

}  // namespace poseidon::tools
