// poseidon-trace's command line: the trace model (--model, --images-per-s), the link it stands
// for and the scale (--link, --rate-cap, --latency-us), the job (--workers, --ps-servers), how
// gradients are reported (--schedule) and synchronised (--hybcomm), the run (--iterations,
// --warmup), the transport (--address, --secret, --timeout) and the outputs (--out). Every rank
// of a job is given the same options.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "tools/cli/cli_fwd.h"
#include "trainer/api/session.h"
#include "trainer/trace/link_scale.h"
#include "trainer/trace/trace_model.h"
#include "trainer/wfbp/merge_options.h"
#include "transport/bootstrap/launch_env.h"

namespace poseidon::tools {

// wfbp: each layer's gradient is reported as its backward step ends ([Poseidon 2015] Algorithm 2);
// no-overlap: every layer's after the whole backward pass, and the next forward pass starts once
// every layer is updated (the papers' "PS without overlap", Caffe+PS).
enum class TraceSchedule { kWfbp, kNoOverlap };
const char* traceScheduleName(TraceSchedule schedule);

struct TraceCommandLine {
  std::string model_spec = "vgg19";
  double images_per_s = 0;  // 0: the papers' (trainer/trace/single_gpu_rate.h)
  std::string link = "10gbit";
  std::string rate_cap = "100mbit";
  double latency_us = 100;  // one way, per message: the cost model's least communication
  int workers = 4;
  int ps_servers = 0;  // 0: as many as workers (Poseidon colocates a shard with each worker)
  std::string schedule_name = "wfbp";
  std::string hybcomm = "closed";
  std::string merge = "off";         // MG-WFBP: off, planned, fixed:<groups>
  std::string merge_cost = "probe";  // planned: T(M) from a probe of the link, or from --latency-us and the rate
  bool priority = true;              // SessionOptions::push.priority
  std::string send_budget;           // this process's send budget on the wire, tc units; empty: none
  std::string send_budget_share;     // DeviceOptions::send_budget_share
  uint64_t iterations = 10;
  uint64_t warmup = 2;
  std::string out_dir;  // empty: no files
  std::string address;
  std::string secret;
  int timeout_s = 120;
  bool print_scale = false;  // print the trace model and its scale, then exit

  // Filled by checkTraceOptions().
  TraceSchedule schedule = TraceSchedule::kWfbp;
  trainer::HybCommOptions hybcomm_options;
  trainer::MergeOptions merge_options;  // with the trace's backward times when planned
  uint64_t send_budget_bytes_per_s = 0;
  trainer::trace::LinkScale scale;
  trainer::trace::TraceModel trace;
  std::string rate_source;

  trainer::JobLayout layout() const { return {workers, ps_servers, 0}; }
};

void addTraceOptions(CLI::App& app, TraceCommandLine& c);

// After CLI11's parsing: the model, its rate, the rates and the combinations. An error names the
// option, the value and what was expected; "" when all is well.
std::string checkTraceOptions(TraceCommandLine& c, const char* environment_secret);

// "10gbit", "250mbit", "800kbit" (tc's units) in bits per second.
Result<double> parseRate(const std::string& text);

trainer::SessionOptions traceSessionOptions(const TraceCommandLine& c, const std::string& address);

}  // namespace poseidon::tools
