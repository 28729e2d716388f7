// What a poseidon-hybcomm-bench worker prints: a perftest-style header block, one row per
// iteration (this worker's sync time, the slowest worker's, the layers' own sync time and each
// layer's scheme), the per-layer table (scheme, iterations, the slowest worker's mean time, bytes
// per iteration), HybComm's choices with their reasons and the summary; and the same as JSON.
//
// An iteration's sync time is wall clock from before the first syncLayer() to after the last, so
// it includes what a scheme does on the CPU: forming U V^T for PS and ring (K M N FMAs per FC
// layer), SFB's reconstruction (P1 K M N). "layers" is the sum of the syncs' own times
// (LayerSyncResult::seconds), which for PS and ring leave the forming out. Every figure called
// "slowest" is the element-wise maximum over the workers (a synchronous step is as slow as its
// slowest worker): per iteration, then averaged.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/layer.h"
#include "scheme/scheme.h"
#include "tools/hybcomm/bench_model.h"
#include "trainer/hybcomm/hybcomm.h"

namespace poseidon::tools {

struct BenchIterationRecord {
  double seconds = 0;          // this worker
  double layer_seconds = 0;    // this worker: sum of the layers' syncs
  double slowest_seconds = 0;  // max over the workers
  double slowest_layer_seconds = 0;
  bool warmup = false;
  bool trial = false;                   // adaptive: HybComm was timing candidates in this iteration
  bool after_event = false;             // --event-command ran before this iteration or an earlier one
  std::vector<scheme::Scheme> schemes;  // per layer, in layer order
};

// One layer under one scheme over the measured iterations.
struct LayerSchemeRecord {
  scheme::Scheme scheme = scheme::Scheme::kPs;
  uint64_t iterations = 0;
  double slowest_mean_seconds = 0;  // max over the workers of their mean
  double bytes_sent = 0;            // per iteration, max over the workers
  double bytes_received = 0;
};

struct LayerRecord {
  model::Layer shape;
  std::vector<LayerSchemeRecord> schemes;                  // those used in measured iterations, PS SFB Adam ring order
  scheme::Scheme last_scheme = scheme::Scheme::kPs;        // in the last iteration
  std::array<double, 4> model_seconds = {-1, -1, -1, -1};  // per scheme::Scheme value (bench_model.h)
};

struct HybBenchReport {
  // The header block.
  int worker = 0;
  int rank = 0;
  int size = 0;
  int workers = 0;
  int ps_servers = 0;
  int adam_servers = 0;  // in the job
  int64_t batch = 0;
  std::string mode;       // --mode
  std::string mode_text;  // HybBenchCommandLine::describeMode()
  std::string layer_spec;
  std::string optimizer;
  std::string transport;
  uint64_t warmup = 0;
  uint64_t planned = 0;
  BenchLinks links;
  uint64_t event_iteration = 0;  // 0: none
  std::string event_command;
  // The measurement.
  std::vector<BenchIterationRecord> iterations;  // warm-up included
  std::vector<LayerRecord> layers;
  std::vector<trainer::Choice> choices;

  // Means over the measured iterations (after the warm-up) of the slowest worker's time: all of
  // them, and those outside HybComm's trial phases (the steady state; for a fixed scheme or the
  // closed form the same iterations). 0 when there is none.
  double meanSeconds(bool steady_only, bool layers_only = false) const;
  uint64_t measuredCount(bool steady_only) const;
};

std::string hybHeader(const HybBenchReport& report);
// The iteration rows, the per-layer table, the choices and the summary.
std::string hybTables(const HybBenchReport& report);
nlohmann::json hybToJson(const HybBenchReport& report);

// "fc6 1024x6272" (M x N) or "conv1 (1792 parameters)": how the report names a layer's shape.
std::string describeLayer(const model::Layer& layer);

}  // namespace poseidon::tools
