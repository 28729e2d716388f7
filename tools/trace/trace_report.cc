#include "tools/trace/trace_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "trainer/hybcomm/cost_model.h"
#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::tools {

namespace {

constexpr scheme::Scheme kSchemes[] = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kRing,
                                       scheme::Scheme::kAdam};

Result<double> schemeSeconds(scheme::Scheme s, const model::Layer& layer, const trainer::ClusterShape& cluster,
                             const trainer::LinkModel& link) {
  auto traffic = trainer::busiestNodeTraffic(s, layer, cluster);
  if (!traffic) return traffic.status();
  return trainer::estimateSeconds(*traffic, link);
}

// One layer's seconds under each scheme; infinity where the scheme does not apply (SFB beyond FC
// layers, the ring with one worker).
struct LayerSeconds {
  double ps = 0;
  double sfb = std::numeric_limits<double>::infinity();
  double ring = std::numeric_limits<double>::infinity();
  double least() const { return std::min({ps, sfb, ring}); }
};

Result<LayerSeconds> schemesSeconds(const model::Layer& layer, const trainer::ClusterShape& cluster,
                                    const trainer::LinkModel& link, int workers) {
  LayerSeconds out;
  auto ps = schemeSeconds(scheme::Scheme::kPs, layer, cluster, link);
  if (!ps) return ps.status();
  out.ps = *ps;
  if (workers > 1) {  // one worker has no ring
    auto ring = schemeSeconds(scheme::Scheme::kRing, layer, cluster, link);
    if (!ring) return ring.status();
    out.ring = *ring;
  }
  if (layer.isFullyConnected()) {
    auto sfb = schemeSeconds(scheme::Scheme::kSfb, layer, cluster, link);
    if (!sfb) return sfb.status();
    out.sfb = *sfb;
  }
  return out;
}

}  // namespace

Result<LeastCommunication> leastCommunication(const TraceCommandLine& c) {
  const trainer::ClusterShape cluster{c.workers, c.ps_servers, static_cast<int64_t>(c.trace.scaled_batch)};
  const trainer::LinkModel link{c.latency_us * 1e-6, c.scale.scaled_bps / 8};
  const trainer::LinkModel bytes_only{0, link.bytes_per_s};
  LeastCommunication least;
  for (const trainer::trace::TraceLayer& layer : c.trace.layers) {
    auto per_scheme = schemesSeconds(layer.scaled, cluster, link, c.workers);
    if (!per_scheme) return per_scheme.status();
    auto transfer = schemesSeconds(layer.scaled, cluster, bytes_only, c.workers);
    if (!transfer) return transfer.status();
    least.ps_s += per_scheme->ps;
    least.ring_s += per_scheme->ring;
    least.ps_sfb_s += std::min(per_scheme->ps, per_scheme->sfb);
    least.least_s += per_scheme->least();
    least.floor_s += transfer->least();
  }
  if (least.floor_s > 0) least.floor_s += link.latency_s;  // the last byte's latency, when any byte moves
  if (c.workers == 1) least.ring_s = std::numeric_limits<double>::quiet_NaN();
  return least;
}

std::string describeTrace(const TraceCommandLine& c, const LeastCommunication& least) {
  const trainer::trace::TraceModel& t = c.trace;
  const double real_mb = 4.0 * static_cast<double>(t.realParams()) / 1e6;
  const double scaled_mb = 4.0 * static_cast<double>(t.scaledParams()) / 1e6;
  std::string out = fmt::format(
      "trace model {}: {} layers, batch K = {} at {:.1f} images/s ({}): compute {:.1f} ms per iteration "
      "(forward {:.1f}, backward {:.1f})\n",
      t.name, t.layers.size(), t.batch, t.images_per_s, c.rate_source, 1e3 * t.computeSeconds(),
      1e3 * t.forwardSeconds(), 1e3 * (t.computeSeconds() - t.forwardSeconds()));
  out += fmt::format(
      "scale: link {} ({:.3g} Gbit/s), cap {} -> s = {:.4g}, scaled rate {:.4g} Mbit/s; model {:.2f} MB -> {:.4f} MB "
      "(x {:.4g}); FC factors' batch K = {}\n",
      c.link, c.scale.real_bps / 1e9, c.rate_cap, c.scale.factor, c.scale.scaled_bps / 1e6, real_mb, scaled_mb,
      real_mb / scaled_mb, t.scaled_batch);
  out += fmt::format(
      "communication per iteration on the scaled link (cost model, {} workers, {} PS servers, {} us per "
      "message sent): least {:.1f} ms (PS {:.1f}, PS/SFB {:.1f}, ring {:.1f}); its bytes alone + one latency "
      "{:.1f} ms; max(compute, that floor) = {:.1f} ms\n",
      c.workers, c.ps_servers, c.latency_us, 1e3 * least.least_s, 1e3 * least.ps_s, 1e3 * least.ps_sfb_s,
      1e3 * least.ring_s, 1e3 * least.floor_s, 1e3 * std::max(t.computeSeconds(), least.floor_s));
  return out;
}

TraceSummary summarize(const std::vector<TraceIteration>& iterations, const LeastCommunication& least,
                       double model_compute_s) {
  TraceSummary s;
  if (iterations.empty()) return s;
  for (const TraceIteration& it : iterations) {
    s.iteration_s += it.seconds;
    s.compute_s += it.compute_seconds;
    s.wait_s += it.wait_seconds;
  }
  const double n = static_cast<double>(iterations.size());
  s.iteration_s /= n;
  s.compute_s /= n;
  s.wait_s /= n;
  s.idle_share = TraceIteration{s.iteration_s, s.compute_s, s.wait_s}.idleShare();
  const double bound = std::max(s.compute_s, least.floor_s);
  s.ratio = bound > 0 ? s.iteration_s / bound : 0;
  const double model_bound = std::max(model_compute_s, least.floor_s);
  s.ratio_model = model_bound > 0 ? s.iteration_s / model_bound : 0;
  return s;
}

std::string traceTable(const TraceCommandLine& c, int rank, const TraceSummary& s, const SchemeTraffic& traffic) {
  std::string out = fmt::format(
      "---------------------------------------------------------------------------------------\n"
      " poseidon-trace {} worker {}: --schedule {} --hybcomm {}, {} measured iterations\n"
      "---------------------------------------------------------------------------------------\n"
      " {:>14} {:>12} {:>10} {:>10} {:>8} {:>24}\n",
      c.trace.name, rank, traceScheduleName(c.schedule), c.hybcomm, c.iterations, "iteration[ms]", "compute[ms]",
      "wait[ms]", "idle", "ratio", "iteration/max(comp,comm)");
  out += fmt::format(" {:>14.2f} {:>12.2f} {:>10.2f} {:>10.3f} {:>8.3f}\n", 1e3 * s.iteration_s, 1e3 * s.compute_s,
                     1e3 * s.wait_s, s.idle_share, s.ratio);
  out += " bytes per iteration (sent + received, this worker):";
  const double n = static_cast<double>(c.iterations);
  for (scheme::Scheme scheme : kSchemes) {
    const SchemeTraffic::Totals t = traffic.totals(scheme);
    if (t.syncs == 0) continue;
    out += fmt::format(" {} {:.3f} MB ({} syncs)", scheme::schemeName(scheme),
                       static_cast<double>(t.sent + t.received) / n / 1e6, t.syncs / c.iterations);
  }
  out += "\n";
  return out;
}

Status writeTraceOutputs(const TraceCommandLine& c, int rank, const std::vector<TraceIteration>& iterations,
                         const TraceSummary& s, const LeastCommunication& least, const SchemeTraffic& traffic,
                         const std::optional<trainer::MergePlan>& plan) {
  if (c.out_dir.empty()) return Status::ok();
  std::error_code error;
  std::filesystem::create_directories(c.out_dir, error);
  if (error) return makeStatus(StatusCode::kIoError, "--out '{}': cannot create it: {}", c.out_dir, error.message());
  const trainer::trace::TraceModel& t = c.trace;
  nlohmann::json json = {
      {"model", t.name},
      {"rank", rank},
      {"workers", c.workers},
      {"ps_servers", c.ps_servers},
      {"schedule", traceScheduleName(c.schedule)},
      {"hybcomm", c.hybcomm},
      {"iterations", c.iterations},
      {"batch", t.batch},
      {"scaled_batch", t.scaled_batch},
      {"images_per_s", t.images_per_s},
      {"rate_source", c.rate_source},
      {"link_bps", c.scale.real_bps},
      {"cap_bps", c.scale.cap_bps},
      {"scale", c.scale.factor},
      {"scaled_bps", c.scale.scaled_bps},
      {"real_bytes", 4 * t.realParams()},
      {"scaled_bytes", 4 * t.scaledParams()},
      {"model_compute_seconds", t.computeSeconds()},
      {"floor_comm_seconds", least.floor_s},
      {"least_comm_seconds", least.least_s},
      {"ps_comm_seconds", least.ps_s},
      {"ps_sfb_comm_seconds", least.ps_sfb_s},
      {"ring_comm_seconds", least.ring_s},
      {"iteration_seconds", s.iteration_s},
      {"compute_seconds", s.compute_s},
      {"wait_seconds", s.wait_s},
      {"idle_share", s.idle_share},
      {"ratio", s.ratio},
      {"ratio_model_compute", s.ratio_model},
  };
  nlohmann::json bytes = nlohmann::json::object();
  for (scheme::Scheme scheme : kSchemes) {
    const SchemeTraffic::Totals tot = traffic.totals(scheme);
    bytes[std::string(scheme::schemeName(scheme))] = {
        {"sent_per_iteration", static_cast<double>(tot.sent) / static_cast<double>(c.iterations)},
        {"received_per_iteration", static_cast<double>(tot.received) / static_cast<double>(c.iterations)},
        {"syncs", tot.syncs}};
  }
  json["bytes"] = bytes;
  json["merge"] = c.merge;
  json["priority"] = c.priority;
  json["send_budget_bytes_per_s"] = c.send_budget_bytes_per_s;
  json["merge_plan"] = plan ? nlohmann::json::parse(trainer::mergePlanJson(*plan)) : nlohmann::json();
  const std::string json_path = fmt::format("{}/worker-{}.json", c.out_dir, rank);
  std::ofstream json_file(json_path);
  json_file << json.dump(2) << "\n";
  const std::string csv_path = fmt::format("{}/iterations-worker{}.csv", c.out_dir, rank);
  std::ofstream csv(csv_path);
  csv << "iteration,seconds,compute_seconds,wait_seconds,idle_share\n";
  for (size_t i = 0; i < iterations.size(); ++i) {
    const TraceIteration& it = iterations[i];
    csv << fmt::format("{},{:.6f},{:.6f},{:.6f},{:.4f}\n", i, it.seconds, it.compute_seconds, it.wait_seconds,
                       it.idleShare());
  }
  // Each measured sync, times in ms from the earliest report: where an iteration's tail goes.
  const std::string syncs_path = fmt::format("{}/syncs-worker{}.csv", c.out_dir, rank);
  std::ofstream syncs(syncs_path);
  syncs << "iteration,layer,name,scheme,reported_ms,started_ms,completed_ms,bytes_sent,bytes_received\n";
  const std::vector<trainer::SyncRecord> records = traffic.records();
  Clock::time_point origin = records.empty() ? Clock::time_point{} : records.front().reported;
  for (const trainer::SyncRecord& r : records) origin = std::min(origin, r.reported);
  const auto ms = [origin](Clock::time_point at) {
    return std::chrono::duration<double, std::milli>(at - origin).count();
  };
  for (const trainer::SyncRecord& r : records) {
    syncs << fmt::format("{},{},{},{},{:.3f},{:.3f},{:.3f},{},{}\n", r.iteration, r.layer,
                         t.layers[r.layer].real.name(), scheme::schemeName(r.scheme), ms(r.reported), ms(r.started),
                         ms(r.completed), r.bytes_sent, r.bytes_received);
  }
  json_file.close();
  csv.close();
  syncs.close();
  if (!json_file || !csv || !syncs) {
    return makeStatus(StatusCode::kIoError, "--out '{}': cannot write {}, {} or {}", c.out_dir, json_path, csv_path,
                      syncs_path);
  }
  return Status::ok();
}

}  // namespace poseidon::tools
