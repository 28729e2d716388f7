#include "tools/trace/trace_options.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>

#include "model/spec.h"
#include "trainer/trace/single_gpu_rate.h"
#include "trainer/wfbp/cost_fit.h"
#include "transport/device.h"

namespace poseidon::tools {

const char* traceScheduleName(TraceSchedule schedule) {
  return schedule == TraceSchedule::kWfbp ? "wfbp" : "no-overlap";
}

Result<double> parseRate(const std::string& text) {
  const std::pair<const char*, double> units[] = {{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}};
  for (const auto& [unit, multiplier] : units) {
    const size_t length = std::char_traits<char>::length(unit);
    if (text.size() <= length || text.compare(text.size() - length, length, unit) != 0) continue;
    double value = 0;
    const char* end = text.data() + text.size() - length;
    const auto [ptr, error] = std::from_chars(text.data(), end, value);
    if (error == std::errc() && ptr == end && std::isfinite(value) && value > 0) return value * multiplier;
  }
  return makeStatus(StatusCode::kInvalidArgument, "'{}': expected a positive <number>kbit, mbit or gbit", text);
}

void addTraceOptions(CLI::App& app, TraceCommandLine& c) {
  app.add_option("--model", c.model_spec,
                 "The network: a zoo name (vgg19, vgg19-22k, googlenet, resnet50, inception-v3, alexnet) or a "
                 "model spec (model/spec.h; default vgg19)")
      ->type_name("SPEC");
  app.add_option("--images-per-s", c.images_per_s,
                 "One GPU's training rate at the model's batch (default: the papers' Titan X figure; needed for a "
                 "custom model)")
      ->type_name("RATE");
  app.add_option("--link", c.link, "The Ethernet the run stands for, in tc's units (default 10gbit)")
      ->type_name("RATE");
  app.add_option("--rate-cap", c.rate_cap,
                 "The most this machine's links carry (default 100mbit): model bytes and link rate are divided by "
                 "s = link / cap")
      ->type_name("RATE");
  app.add_option("--latency-us", c.latency_us,
                 "One-way latency per message for the cost model's least communication (default 100)")
      ->type_name("US");
  app.add_option("--workers", c.workers, "Worker ranks P1 (ranks 0..P1-1; default 4)")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  app.add_option("--ps-servers", c.ps_servers, "Parameter-server ranks P2 after the workers (default: P1)")
      ->type_name("N")
      ->check(CLI::Range(0, 256));
  app.add_option("--schedule", c.schedule_name,
                 "wfbp (report each layer as its backward ends, default) or no-overlap (report all after the "
                 "backward pass, forward once all are updated: PS without overlap)")
      ->type_name("NAME");
  app.add_option("--hybcomm", c.hybcomm, "closed (default), adaptive, or one scheme for all: ps, sfb, ring")
      ->type_name("MODE");
  app.add_option("--merge", c.merge,
                 "MG-WFBP: off (default), planned (the trace's backward times, T(M) per --merge-cost), or "
                 "fixed:<groups> (positions from the output layer, e.g. fixed:0,1,2-9)")
      ->type_name("MODE");
  app.add_option("--merge-cost", c.merge_cost,
                 "planned: probe (default: the Session times the link to worker 1 at start-up) or link (the scaled "
                 "rate and --latency-us through the cost model)")
      ->type_name("probe|link");
  app.add_flag("--priority,!--no-priority", c.priority,
               "PS syncs send the chunks of the layers nearest the input first when several wait for the link, "
               "pushes and the servers' answers (default on; --no-priority: in the order they became ready)");
  app.add_option("--send-budget", c.send_budget,
                 "The bandwidth manager: this process sends at most this rate on the wire (tc units, e.g. 50mbit; "
                 "not scaled: it meters the real link); with --send-budget-share, the budget of every process on "
                 "this host giving that name")
      ->type_name("RATE");
  app.add_option("--send-budget-share", c.send_budget_share,
                 "Processes on one host giving this name (and the same --send-budget) draw from one budget")
      ->type_name("NAME");
  app.add_option("--iterations", c.iterations, "Measured iterations (default 10)")->type_name("N");
  app.add_option("--warmup", c.warmup, "Iterations before the measured ones (default 2)")->type_name("N");
  app.add_option("--out", c.out_dir, "Where worker-<rank>.json and iterations-worker<rank>.csv go (default: none)")
      ->type_name("DIR");
  app.add_option("--address", c.address, "Address this rank listens on (default: its route to rank 0)")
      ->type_name("ADDRESS");
  app.add_option("--secret", c.secret, "The job's shared secret (default $POSEIDON_SECRET)")->type_name("SECRET");
  app.add_option("--timeout", c.timeout_s, "Seconds any one wait for a peer may take (default 120)")
      ->type_name("SECONDS");
  app.add_flag("--print-scale", c.print_scale, "Print the trace model, the scale factor and the scaled rate; exit");
}

namespace {

std::string checkHybComm(TraceCommandLine& c) {
  trainer::HybCommOptions& options = c.hybcomm_options;
  const std::pair<const char*, scheme::Scheme> fixed[] = {
      {"ps", scheme::Scheme::kPs}, {"sfb", scheme::Scheme::kSfb}, {"ring", scheme::Scheme::kRing}};
  for (const auto& [name, s] : fixed) {
    if (c.hybcomm == name) {
      options.mode = trainer::HybCommMode::kFixed;
      options.fixed = s;
      return {};
    }
  }
  if (c.hybcomm == "adaptive") {
    options.mode = trainer::HybCommMode::kAdaptive;
    return {};
  }
  if (c.hybcomm == "closed") return {};
  return fmt::format("--hybcomm '{}': expected closed, adaptive, ps, sfb or ring", c.hybcomm);
}

// --merge and --merge-cost, after the trace model and the scale are known.
std::string checkMerge(TraceCommandLine& c) {
  auto merge = trainer::parseMergeMode(c.merge);
  if (!merge) return fmt::format("--merge: {}", merge.status().message());
  c.merge_options = std::move(*merge);
  if (c.merge_cost != "probe" && c.merge_cost != "link") {
    return fmt::format("--merge-cost '{}': expected probe or link", c.merge_cost);
  }
  if (c.merge_options.mode == trainer::MergeOptions::Mode::kOff) return {};
  // The trace knows each layer's backward time: the profile a trainer would measure. Output layer
  // first, as the planner numbers them.
  for (size_t p = c.trace.layers.size(); p-- > 0;)
    c.merge_options.backward_seconds.push_back(c.trace.layers[p].backward_s);
  if (c.merge_options.mode == trainer::MergeOptions::Mode::kPlanned && c.merge_cost == "link") {
    const bool ring = c.hybcomm == "ring";
    const trainer::ClusterShape cluster{c.workers, c.ps_servers, static_cast<int64_t>(c.trace.scaled_batch)};
    const trainer::LinkModel link{c.latency_us * 1e-6, c.scale.scaled_bps / 8};
    auto cost = trainer::syncMessageCost(ring ? scheme::Scheme::kRing : scheme::Scheme::kPs, cluster, link);
    if (!cost) return fmt::format("--merge-cost link: {}", cost.status().message());
    c.merge_options.cost = *cost;
  } else if (c.merge_options.mode == trainer::MergeOptions::Mode::kPlanned && c.workers < 2) {
    return "--merge planned --merge-cost probe: one worker has no link to probe; use --merge-cost link";
  }
  // Checked against the model now, so a bad plan is a usage error before any rank starts.
  auto units = trainer::planMergeUnits(
      c.trace.scaledModel(),
      c.merge_options.mode == trainer::MergeOptions::Mode::kPlanned ? trainer::MergeOptions{} : c.merge_options);
  if (!units) return fmt::format("--merge {}: {}", c.merge, units.status().message());
  return {};
}

}  // namespace

std::string checkTraceOptions(TraceCommandLine& c, const char* environment_secret) {
  if (c.schedule_name == "wfbp") {
    c.schedule = TraceSchedule::kWfbp;
  } else if (c.schedule_name == "no-overlap") {
    c.schedule = TraceSchedule::kNoOverlap;
  } else {
    return fmt::format("--schedule '{}': expected wfbp or no-overlap", c.schedule_name);
  }
  if (std::string error = checkHybComm(c); !error.empty()) return error;
  if (c.iterations < 1 || c.iterations > 1000000) {
    return fmt::format("--iterations {}: expected an integer from 1 to 1000000", c.iterations);
  }
  if (c.warmup > 1000000) return fmt::format("--warmup {}: expected an integer from 0 to 1000000", c.warmup);
  if (c.timeout_s < 1 || c.timeout_s > 86400) {
    return fmt::format("--timeout {}: expected seconds from 1 to 86400", c.timeout_s);
  }
  if (!std::isfinite(c.latency_us) || c.latency_us < 0) {
    return fmt::format("--latency-us {}: expected a latency >= 0", c.latency_us);
  }
  if (!std::isfinite(c.images_per_s) || c.images_per_s < 0) {
    return fmt::format("--images-per-s {}: expected a positive rate (or 0: the papers')", c.images_per_s);
  }
  if (c.ps_servers == 0) c.ps_servers = c.workers;
  auto link = parseRate(c.link);
  if (!link) return fmt::format("--link {}", link.status().message());
  auto cap = parseRate(c.rate_cap);
  if (!cap) return fmt::format("--rate-cap {}", cap.status().message());
  if (!c.send_budget.empty()) {
    auto budget = parseRate(c.send_budget);
    if (!budget) return fmt::format("--send-budget {}", budget.status().message());
    if (*budget > 1e12) return fmt::format("--send-budget '{}': expected at most 1000gbit", c.send_budget);
    c.send_budget_bytes_per_s = static_cast<uint64_t>(*budget / 8);
  }
  transport::DeviceOptions budget;  // the device's own rules for the two (validate())
  budget.send_budget_bytes_per_s = c.send_budget_bytes_per_s;
  budget.send_budget_share = c.send_budget_share;
  if (Status checked = budget.validate(); !checked.isOk()) {
    return fmt::format("--send-budget '{}' --send-budget-share '{}': {}", c.send_budget, c.send_budget_share,
                       checked.message());
  }
  auto scale = trainer::trace::chooseLinkScale(*link, *cap);
  if (!scale) return scale.status().message();
  c.scale = *scale;
  auto model = model::parseModelSpec(c.model_spec);
  if (!model) return fmt::format("--model: {}", model.status().message());
  double rate = c.images_per_s;
  c.rate_source = "--images-per-s";
  if (rate == 0) {
    auto paper = trainer::trace::paperRate(*model);
    if (!paper) return fmt::format("--model '{}': {}", c.model_spec, paper.status().message());
    rate = paper->images_per_s;
    c.rate_source = paper->source;
  }
  auto trace = trainer::trace::buildTraceModel(*model, rate, c.scale.factor);
  if (!trace) return fmt::format("--model '{}': {}", c.model_spec, trace.status().message());
  c.trace = std::move(*trace);
  if (c.hybcomm == "sfb" && c.trace.scaledModel().fcLayers().empty()) {
    return fmt::format("--hybcomm sfb: model '{}' has no fully-connected layer", c.model_spec);
  }
  if (std::string error = checkMerge(c); !error.empty()) return error;
  if (c.secret.empty() && environment_secret != nullptr) c.secret = environment_secret;
  return {};
}

trainer::SessionOptions traceSessionOptions(const TraceCommandLine& c, const std::string& address) {
  trainer::SessionOptions options;
  options.job = "trace";
  options.layout = c.layout();
  options.batch = c.trace.scaled_batch;
  options.hybcomm = c.hybcomm_options;
  options.merge = c.merge_options;
  options.chunk_bytes = trainer::trace::scaledChunkBytes(options.chunk_bytes, c.scale.factor);
  // The push window is two chunks: scaled with them, so it holds back what it would at full size.
  options.push.window_bytes = 2 * options.chunk_bytes;
  options.push.priority = c.priority;
  options.device.send_budget_bytes_per_s = c.send_budget_bytes_per_s;
  options.device.send_budget_share = c.send_budget_share;
  options.device.address = address;
  options.device.secret = c.secret;
  options.startup_timeout = std::chrono::seconds(c.timeout_s);
  options.sync_timeout = std::chrono::seconds(c.timeout_s);
  return options;
}

}  // namespace poseidon::tools
