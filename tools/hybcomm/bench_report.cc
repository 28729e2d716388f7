#include "tools/hybcomm/bench_report.h"

#include <fmt/format.h>

#include "tools/perf/report.h"

namespace poseidon::tools {
namespace {

std::string schemeList(const std::vector<scheme::Scheme>& schemes) {
  std::string text;
  for (scheme::Scheme s : schemes) text += fmt::format("{}{}", text.empty() ? "" : " ", scheme::schemeName(s));
  return text;
}

constexpr scheme::Scheme kModelOrder[] = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kAdam,
                                          scheme::Scheme::kRing};

double modelOf(const LayerRecord& layer, scheme::Scheme scheme) {
  return layer.model_seconds[static_cast<size_t>(scheme)];
}

// The model's time per iteration for the schemes of the last iteration (-1: no model).
double modelIteration(const HybBenchReport& r) {
  double sum = 0;
  for (const LayerRecord& layer : r.layers) {
    const double t = modelOf(layer, layer.last_scheme);
    if (t < 0) return -1;
    sum += t;
  }
  return sum;
}

const char* phase(const BenchIterationRecord& it) {
  if (it.warmup) return "warm-up";
  return it.trial ? "trial" : "steady";
}

}  // namespace

double HybBenchReport::meanSeconds(bool steady_only, bool layers_only) const {
  double sum = 0;
  uint64_t count = 0;
  for (const BenchIterationRecord& it : iterations) {
    if (it.warmup || (steady_only && it.trial)) continue;
    sum += layers_only ? it.slowest_layer_seconds : it.slowest_seconds;
    ++count;
  }
  return count > 0 ? sum / static_cast<double>(count) : 0;
}

uint64_t HybBenchReport::measuredCount(bool steady_only) const {
  uint64_t count = 0;
  for (const BenchIterationRecord& it : iterations) count += !it.warmup && !(steady_only && it.trial);
  return count;
}

std::string hybHeader(const HybBenchReport& r) {
  std::string out = perf::resultLine();
  out += "                    HybComm layer synchronisation (poseidon-hybcomm-bench)\n";
  out += fmt::format(" Worker          : {} of {}\t\tRank           : {} of {}\n", r.worker, r.workers, r.rank, r.size);
  out += fmt::format(" PS servers      : {}\t\tAdam servers   : {}\n", r.ps_servers, r.adam_servers);
  out += fmt::format(" Mode            : {}\n", r.mode_text);
  std::string shapes;
  for (const LayerRecord& layer : r.layers)
    shapes += fmt::format("{}{}", shapes.empty() ? "" : ", ", describeLayer(layer.shape));
  out += fmt::format(" Layers          : {} (batch K = {})\n", shapes, r.batch);
  out += fmt::format(" Optimizer       : {} (on every worker)\n", r.optimizer);
  out += fmt::format(" Transport       : {}\n", r.transport);
  out += fmt::format(" Iterations      : {} measured after {} warm-up; layers synced in backward order\n", r.planned,
                     r.warmup);
  if (r.event_iteration > 0) {
    out +=
        fmt::format(" Event           : worker 0 runs '{}' before iteration {}\n", r.event_command, r.event_iteration);
  }
  if (r.links.given()) {
    out += fmt::format(
        " Cost model      : links {:.3f} Gb/s, {:.1f} usec per message{}\n", r.links.bits_per_s / 1e9,
        r.links.latency_s * 1e6,
        r.links.slow_worker_bits_per_s > 0
            ? fmt::format(", worker {} at {:.3f} Gb/s{}", r.workers - 1, r.links.slow_worker_bits_per_s / 1e9,
                          r.links.slow_worker_upload_only ? " (its upload)" : "")
            : std::string());
  }
  out += perf::resultLine();
  return out;
}

std::string hybTables(const HybBenchReport& r) {
  std::string names;
  for (const LayerRecord& layer : r.layers) names += fmt::format("{}{}", names.empty() ? "" : " ", layer.shape.name());
  std::string out = fmt::format(
      " #iteration  phase     sync[msec]   slowest[msec]  layers[msec]  slowest layers[msec]  "
      "schemes ({})\n",
      names);
  for (size_t i = 0; i < r.iterations.size(); ++i) {
    const BenchIterationRecord& it = r.iterations[i];
    const bool event = it.after_event && (i == 0 || !r.iterations[i - 1].after_event);
    if (event) out += fmt::format(" (--event-command ran before iteration {})\n", i + 1);
    out += fmt::format(" {:<11} {:<9} {:<12.2f} {:<14.2f} {:<13.2f} {:<21.2f} {}\n", i + 1, phase(it), it.seconds * 1e3,
                       it.slowest_seconds * 1e3, it.layer_seconds * 1e3, it.slowest_layer_seconds * 1e3,
                       schemeList(it.schemes));
  }
  out += perf::resultLine();
  out += " layer       scheme  iterations  slowest mean[msec]  model[msec]  sent[B]/iteration  received[B]/iteration\n";
  for (const LayerRecord& layer : r.layers) {
    for (const LayerSchemeRecord& s : layer.schemes) {
      const double model = modelOf(layer, s.scheme);
      out += fmt::format(" {:<11} {:<7} {:<11} {:<19.2f} {:<12} {:<18.0f} {:.0f}\n", layer.shape.name(),
                         scheme::schemeName(s.scheme), s.iterations, s.slowest_mean_seconds * 1e3,
                         model < 0 ? std::string("-") : fmt::format("{:.2f}", model * 1e3), s.bytes_sent,
                         s.bytes_received);
    }
  }
  if (r.links.given()) {
    out += perf::resultLine();
    out += " The cost model per layer (network only: bytes / rate + messages x latency; no CPU work, no waiting):\n";
    for (const LayerRecord& layer : r.layers) {
      std::string row;
      scheme::Scheme best = scheme::Scheme::kPs;
      for (scheme::Scheme s : kModelOrder) {
        const double t = modelOf(layer, s);
        if (t < 0) continue;
        row += fmt::format("{}{} {:.2f}", row.empty() ? "" : ", ", scheme::schemeName(s), t * 1e3);
        if (modelOf(layer, best) < 0 || t < modelOf(layer, best)) best = s;
      }
      out += fmt::format("  {:<11} {} msec: {} fastest\n", layer.shape.name(), row, scheme::schemeName(best));
    }
  }
  out += perf::resultLine();
  out += " HybComm's choices (iteration: reason):\n";
  for (const trainer::Choice& choice : r.choices) out += fmt::format("  {}: {}\n", choice.iteration, choice.reason);
  out += perf::resultLine();
  const uint64_t all = r.measuredCount(false);
  const uint64_t steady = r.measuredCount(true);
  out += fmt::format(
      " mode {}: slowest worker's mean sync per iteration {:.2f} msec over {} measured iterations "
      "(layers' own syncs {:.2f} msec)\n",
      r.mode, r.meanSeconds(false) * 1e3, all, r.meanSeconds(false, true) * 1e3);
  if (steady != all) {
    out += fmt::format(
        " mode {}: steady state (trial phases left out) {:.2f} msec over {} iterations (layers' own "
        "syncs {:.2f} msec)\n",
        r.mode, r.meanSeconds(true) * 1e3, steady, r.meanSeconds(true, true) * 1e3);
  }
  const double model = modelIteration(r);
  if (model >= 0) {
    out += fmt::format(
        " mode {}: the cost model for the last iteration's schemes: {:.2f} msec per iteration "
        "(measured / model {:.2f})\n",
        r.mode, model * 1e3, model > 0 ? r.meanSeconds(steady != all) / model : 0.0);
  }
  out += perf::resultLine();
  return out;
}

nlohmann::json hybToJson(const HybBenchReport& r) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const BenchIterationRecord& it : r.iterations) {
    nlohmann::json schemes = nlohmann::json::array();
    for (scheme::Scheme s : it.schemes) schemes.push_back(scheme::schemeName(s));
    iterations.push_back({{"seconds", it.seconds},
                          {"layer_seconds", it.layer_seconds},
                          {"slowest_seconds", it.slowest_seconds},
                          {"slowest_layer_seconds", it.slowest_layer_seconds},
                          {"phase", phase(it)},
                          {"after_event", it.after_event},
                          {"schemes", schemes}});
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerRecord& layer : r.layers) {
    nlohmann::json schemes = nlohmann::json::array();
    for (const LayerSchemeRecord& s : layer.schemes) {
      schemes.push_back({{"scheme", scheme::schemeName(s.scheme)},
                         {"iterations", s.iterations},
                         {"slowest_mean_seconds", s.slowest_mean_seconds},
                         {"bytes_sent_per_iteration", s.bytes_sent},
                         {"bytes_received_per_iteration", s.bytes_received},
                         {"model_seconds", modelOf(layer, s.scheme)}});
    }
    nlohmann::json model = nlohmann::json::object();
    for (scheme::Scheme s : kModelOrder) {
      if (modelOf(layer, s) >= 0) model[std::string(scheme::schemeName(s))] = modelOf(layer, s);
    }
    layers.push_back({{"name", layer.shape.name()},
                      {"fully_connected", layer.shape.isFullyConnected()},
                      {"m", layer.shape.fc().rows},
                      {"n", layer.shape.fc().cols},
                      {"params", layer.shape.denseFloats()},
                      {"last_scheme", scheme::schemeName(layer.last_scheme)},
                      {"schemes", schemes},
                      {"model_seconds", model}});
  }
  nlohmann::json choices = nlohmann::json::array();
  for (const trainer::Choice& c : r.choices) {
    choices.push_back({{"iteration", c.iteration},
                       {"layer", r.layers.at(c.layer).shape.name()},
                       {"scheme", scheme::schemeName(c.scheme)},
                       {"reason", c.reason}});
  }
  return {{"tool", "poseidon-hybcomm-bench"},
          {"mode", r.mode},
          {"mode_text", r.mode_text},
          {"worker", r.worker},
          {"rank", r.rank},
          {"size", r.size},
          {"workers", r.workers},
          {"ps_servers", r.ps_servers},
          {"adam_servers", r.adam_servers},
          {"batch", r.batch},
          {"layer_spec", r.layer_spec},
          {"optimizer", r.optimizer},
          {"transport", r.transport},
          {"warmup", r.warmup},
          {"iterations", iterations},
          {"layers", layers},
          {"choices", choices},
          {"measured_iterations", r.measuredCount(false)},
          {"steady_iterations", r.measuredCount(true)},
          {"mean_seconds", r.meanSeconds(false)},
          {"steady_mean_seconds", r.meanSeconds(true)},
          {"mean_layer_seconds", r.meanSeconds(false, true)},
          {"steady_mean_layer_seconds", r.meanSeconds(true, true)},
          {"event_iteration", r.event_iteration},
          {"model_link_bps", r.links.bits_per_s},
          {"model_latency_seconds", r.links.latency_s},
          {"model_slow_worker_bps", r.links.slow_worker_bits_per_s},
          {"model_iteration_seconds", modelIteration(r)}};
}

std::string describeLayer(const model::Layer& layer) {
  if (layer.isFullyConnected()) return fmt::format("{} {}x{}", layer.name(), layer.fc().rows, layer.fc().cols);
  return fmt::format("{} ({} parameters)", layer.name(), layer.params());
}

}  // namespace poseidon::tools
