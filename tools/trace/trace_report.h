// What poseidon-trace reports: the trace model at its scale, the least communication the cost
// model (trainer/hybcomm/cost_model.h) gives an iteration on the scaled link, and per run the
// iteration time, its ratio to max(compute, least communication), the GPU-idle share and the
// bytes per scheme: a perftest-style table on stdout, worker-<rank>.json,
// iterations-worker<rank>.csv and syncs-worker<rank>.csv in --out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/trace/trace_options.h"
#include "tools/trace/trace_worker.h"
#include "trainer/wfbp/merge_plan.h"

namespace poseidon::tools {

// Seconds one iteration's syncs take on the scaled link by the cost model (the busiest node, full
// duplex, --latency-us per message sent, one after another as [Poseidon analysis] prices them):
// each scheme for every layer it applies to, and the least of them per layer summed (the best any
// per-layer choice can do).
//
// The ratios divide by `floor_s` instead: per layer the scheme moving the fewest bytes through the
// busiest node (not always the cost model's choice), at the link rate, plus one message's latency.
// Its bytes are the busiest node's as bench-overlap runs the PS: a server colocated with each
// worker. The cost model's latencies add up, which real messages' do not (a
// node's messages to its peers, and WFBP's layers, are in flight together): for ResNet-50's 107
// layers on 8 workers they make 150 of its 283 ms, and a run that overlaps them came in under it.
// No schedule moves the busiest node's bytes faster than its link, so the floor is one.
struct LeastCommunication {
  double ps_s = 0;
  double ring_s = 0;
  double ps_sfb_s = 0;  // PS, or SFB where it is faster (what HybComm of PS and SFB can do)
  double least_s = 0;
  double floor_s = 0;
};
Result<LeastCommunication> leastCommunication(const TraceCommandLine& c);

// The trace model, its scale and the least communication, a few lines.
std::string describeTrace(const TraceCommandLine& c, const LeastCommunication& least);

struct TraceSummary {
  double iteration_s = 0;  // mean over the measured iterations
  double compute_s = 0;
  double wait_s = 0;
  double idle_share = 0;
  double ratio = 0;        // iteration / max(compute slept in this run, least communication)
  double ratio_model = 0;  // iteration / max(the model's compute, least communication)
};
TraceSummary summarize(const std::vector<TraceIteration>& iterations, const LeastCommunication& least,
                       double model_compute_s);

// The perftest-style table of this worker's run.
std::string traceTable(const TraceCommandLine& c, int rank, const TraceSummary& summary, const SchemeTraffic& traffic);

// worker-<rank>.json, iterations-worker<rank>.csv and syncs-worker<rank>.csv (every measured
// sync: reported, started, completed, bytes) in --out (nothing without --out).
// With merging, the plan and its predicted times go into the JSON ("merge_plan").
Status writeTraceOutputs(const TraceCommandLine& c, int rank, const std::vector<TraceIteration>& iterations,
                         const TraceSummary& summary, const LeastCommunication& least, const SchemeTraffic& traffic,
                         const std::optional<trainer::MergePlan>& plan);

}  // namespace poseidon::tools
