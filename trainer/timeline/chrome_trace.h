// Chrome trace JSON (the Trace Event Format that Perfetto and chrome://tracing open) from a
// timeline, and the merge of several workers' traces into one.
//
// One process per worker: pid = rank, named by a process_name metadata event ("worker 2"); one
// thread per lane: tid = lane id, named by thread_name ("compute", "sync-0"); each interval an
// "X" (complete) event with name = layer, cat = category, ts and dur in microseconds of the
// steady clock, args.iteration. Events lost to a full lane are counted in
// otherData.dropped_events["worker 2"] and shown as the process's label.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/timeline/interval.h"

namespace poseidon::trainer::timeline {

std::string chromeTraceJson(const Trace& trace);

// Writes the trace to `path` through a temporary file and a rename: a reader never sees half.
Status writeChromeTrace(const Trace& trace, const std::string& path);

// One trace of several workers' trace files: their events together, their dropped counts
// together. Fails naming the file when one is not a trace of ours, or when two hold the same pid.
Result<std::string> mergeChromeTraces(const std::vector<std::string>& paths);
Status mergeChromeTraceFiles(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace poseidon::trainer::timeline
