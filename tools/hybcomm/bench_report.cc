#include "tools/hybcomm/bench_report.h"

#include <fmt/format.h>

#include "tools/hybcomm/layer_spec.h"
#include "tools/perf/report.h"

namespace poseidon::tools {
namespace {

std::string schemeList(const std::vector<sfb::Scheme>& schemes) {
  std::string text;
  for (sfb::Scheme s : schemes) text += fmt::format("{}{}", text.empty() ? "" : " ", sfb::schemeName(s));
  return text;
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
  out += perf::resultLine();
  return out;
}

std::string hybTables(const HybBenchReport& r) {
  std::string names;
  for (const LayerRecord& layer : r.layers) names += fmt::format("{}{}", names.empty() ? "" : " ", layer.shape.name);
  std::string out = fmt::format(
      " #iteration  phase     sync[msec]   slowest[msec]  layers[msec]  slowest layers[msec]  "
      "schemes ({})\n",
      names);
  for (size_t i = 0; i < r.iterations.size(); ++i) {
    const BenchIterationRecord& it = r.iterations[i];
    out += fmt::format(" {:<11} {:<9} {:<12.2f} {:<14.2f} {:<13.2f} {:<21.2f} {}\n", i + 1, phase(it), it.seconds * 1e3,
                       it.slowest_seconds * 1e3, it.layer_seconds * 1e3, it.slowest_layer_seconds * 1e3,
                       schemeList(it.schemes));
  }
  out += perf::resultLine();
  out += " layer       scheme  iterations  slowest mean[msec]  sent[B]/iteration  received[B]/iteration\n";
  for (const LayerRecord& layer : r.layers) {
    for (const LayerSchemeRecord& s : layer.schemes) {
      out +=
          fmt::format(" {:<11} {:<7} {:<11} {:<19.2f} {:<18.0f} {:.0f}\n", layer.shape.name, sfb::schemeName(s.scheme),
                      s.iterations, s.slowest_mean_seconds * 1e3, s.bytes_sent, s.bytes_received);
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
  out += perf::resultLine();
  return out;
}

nlohmann::json hybToJson(const HybBenchReport& r) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const BenchIterationRecord& it : r.iterations) {
    nlohmann::json schemes = nlohmann::json::array();
    for (sfb::Scheme s : it.schemes) schemes.push_back(sfb::schemeName(s));
    iterations.push_back({{"seconds", it.seconds},
                          {"layer_seconds", it.layer_seconds},
                          {"slowest_seconds", it.slowest_seconds},
                          {"slowest_layer_seconds", it.slowest_layer_seconds},
                          {"phase", phase(it)},
                          {"schemes", schemes}});
  }
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerRecord& layer : r.layers) {
    nlohmann::json schemes = nlohmann::json::array();
    for (const LayerSchemeRecord& s : layer.schemes) {
      schemes.push_back({{"scheme", sfb::schemeName(s.scheme)},
                         {"iterations", s.iterations},
                         {"slowest_mean_seconds", s.slowest_mean_seconds},
                         {"bytes_sent_per_iteration", s.bytes_sent},
                         {"bytes_received_per_iteration", s.bytes_received}});
    }
    layers.push_back({{"name", layer.shape.name},
                      {"fully_connected", layer.shape.isFullyConnected()},
                      {"m", layer.shape.m},
                      {"n", layer.shape.n},
                      {"params", layer.shape.denseFloats()},
                      {"last_scheme", sfb::schemeName(layer.last_scheme)},
                      {"schemes", schemes}});
  }
  nlohmann::json choices = nlohmann::json::array();
  for (const trainer::Choice& c : r.choices) {
    choices.push_back({{"iteration", c.iteration},
                       {"layer", r.layers.at(c.layer).shape.name},
                       {"scheme", sfb::schemeName(c.scheme)},
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
          {"steady_mean_layer_seconds", r.meanSeconds(true, true)}};
}

}  // namespace poseidon::tools
