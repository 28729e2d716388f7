#include "tools/hybcomm/bench_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/spec.h"
#include "tools/cli/readable_range.h"
#include "trainer/sync/hybrid_ps.h"

namespace poseidon::tools {

using scheme::Scheme;

namespace {

// "ranks 0..3" / "rank 4"
std::string ranks(int first, int count) {
  return count == 1 ? fmt::format("rank {}", first) : fmt::format("ranks {}..{}", first, first + count - 1);
}

std::string plural(int count, const char* one) { return fmt::format("{} {}{}", count, one, count == 1 ? "" : "s"); }

trainer::HybCommOptions hybcommOptions(const HybBenchCommandLine& c) {
  trainer::HybCommOptions options;
  options.trial_iterations = c.trial_iterations;
  options.window = c.window;
  options.drift_margin = c.drift_margin;
  const std::pair<const char*, scheme::Scheme> fixed[] = {{"ps", scheme::Scheme::kPs},
                                                          {"sfb", scheme::Scheme::kSfb},
                                                          {"ring", scheme::Scheme::kRing},
                                                          {"adam", scheme::Scheme::kAdam}};
  for (const auto& [name, scheme] : fixed) {
    if (c.mode == name) {
      options.mode = trainer::HybCommMode::kFixed;
      options.fixed = scheme;
    }
  }
  if (c.mode == "closed") options.mode = trainer::HybCommMode::kClosedForm;
  if (c.mode == "adaptive") {
    options.mode = trainer::HybCommMode::kAdaptive;
    options.candidates = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kRing};
    if (c.adam_servers > 0) options.candidates.push_back(scheme::Scheme::kAdam);
  }
  return options;
}

// The schemes HybridSync sets up (and so the contexts the workers connect): PS always, each
// layer's first scheme, and in adaptive mode every candidate that applies to some layer.
std::vector<scheme::Scheme> schemesInUse(const trainer::HybComm& hybcomm, const trainer::HybCommOptions& options) {
  std::vector<scheme::Scheme> used{scheme::Scheme::kPs};
  const auto add = [&](scheme::Scheme s) {
    if (std::find(used.begin(), used.end(), s) == used.end()) used.push_back(s);
  };
  for (size_t l = 0; l < hybcomm.layerCount(); ++l) {
    add(hybcomm.scheme(l));
    if (options.mode != trainer::HybCommMode::kAdaptive) continue;
    for (scheme::Scheme candidate : options.candidates) {
      if (trainer::HybComm::applies(candidate, hybcomm.layer(l))) add(candidate);
    }
  }
  return used;
}

}  // namespace

const char* roleName(BenchRole role) {
  switch (role) {
    case BenchRole::kWorker: return kWorkerRole;
    case BenchRole::kPsServer: return kPsServerRole;
    case BenchRole::kAdamServer: return kAdamServerRole;
  }
  return "?";
}

bool HybBenchCommandLine::uses(scheme::Scheme scheme) const {
  return std::find(schemes.begin(), schemes.end(), scheme) != schemes.end();
}

BenchRole HybBenchCommandLine::roleOfRank(int rank) const {
  if (rank < workers()) return BenchRole::kWorker;
  if (rank < workers() + psServers()) return BenchRole::kPsServer;
  return BenchRole::kAdamServer;
}

std::string HybBenchCommandLine::rankLayout() const {
  std::string text = fmt::format("workers on {}, PS servers on {}", ranks(0, workers()), ranks(workers(), psServers()));
  if (adamServersInJob() > 0) {
    text += fmt::format(", {} on {}", adamServersInJob() == 1 ? "Adam server" : "Adam servers",
                        ranks(workers() + psServers(), adamServersInJob()));
  } else {
    text += fmt::format(", no Adam server (mode {} does not use Adam)", mode);
  }
  return text;
}

std::string HybBenchCommandLine::describeMode() const {
  switch (hybcomm.mode) {
    case trainer::HybCommMode::kFixed:
      return fmt::format("{} (fixed: every layer it applies to, the others PS)", scheme::schemeName(hybcomm.fixed));
    case trainer::HybCommMode::kClosedForm:
      return "closed (the papers' closed form: SFB vs PS per layer from P1, P2, K and the shape)";
    case trainer::HybCommMode::kAdaptive: {
      std::string names;
      for (scheme::Scheme s : hybcomm.candidates)
        names += fmt::format("{}{}", names.empty() ? "" : ", ", scheme::schemeName(s));
      return fmt::format("adaptive ({}; {} each, window {}, drift margin {})", names,
                         plural(hybcomm.trial_iterations, "trial iteration"), hybcomm.window, hybcomm.drift_margin);
    }
  }
  return mode;
}

void addBenchOptions(CLI::App& app, HybBenchCommandLine& c) {
  c.job.job_name = "hybcomm";
  addJobOptions(app, c.job);
  for (const char* name : {"--model", "--servers", "--consistency"}) app.remove_option(app.get_option(name));
  app.get_option("--workers")->description("Worker ranks P1 (ranks 0..P1-1)")->required();
  app.get_option("--optimizer")
      ->description(
          "The workers' optimizer (each applies it to its replica; the PS servers only sum): sgd "
          "(default), sgd:lr=0.1,momentum=0.9, adagrad:lr=..., adam:lr=... (see kernels/optimizer_config.h)");
  app.get_option("--size")->description(
      "Ranks in the job: workers + PS servers + Adam servers in the job (with --rank)");
  app.get_option("--job-name")->description("Prefix of the job's keys in the store (default hybcomm)");
  app.add_option("--ps-servers", c.job.servers, "PS summation server ranks P2 (ranks P1..P1+P2-1; default 1)")
      ->type_name("N")
      ->check(CLI::Range(1, 1024));
  app.add_option("--adam-servers", c.adam_servers,
                 "Adam server ranks, after the PS servers, in a job whose mode may pick Adam (default 1; 0: adaptive "
                 "leaves Adam out)")
      ->type_name("N")
      ->check(CLI::Range(0, 1024));
  app.add_option("--role", c.role, "worker, ps-server or adam-server: checked against the rank (default: the rank's)")
      ->type_name("ROLE")
      ->check(CLI::IsMember({kWorkerRole, kPsServerRole, kAdamServerRole}));
  app.add_option("--batch", c.batch,
                 "K: each worker's batch, the rank of its FC gradients (default: the batch --layers sets, a zoo "
                 "model's K, else 256)")
      ->type_name("K")
      ->check(CLI::Range(int64_t{1}, kMaxBatch));
  app.add_option("--layers", c.layer_spec,
                 fmt::format("The model, a model spec: a zoo name (vgg19, googlenet, ...) or sections in forward "
                             "order, fc:<name>=<M>x<N>[+bias],...;conv:...;other:<name>=<parameters>,... "
                             "(default {}: VGG19-22K's FC layers / 4)",
                             kDefaultLayerSpec))
      ->type_name("SPEC");
  app.add_option("--mode", c.mode,
                 "ps, sfb, ring, adam (one scheme for every layer it applies to), closed (the closed form, default) "
                 "or adaptive (measured)")
      ->type_name("MODE")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kModeNames), std::end(kModeNames))));
  app.add_option("--iterations", c.iterations, "Measured iterations after the warm-up (default 10)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, kMaxBenchIterations));
  app.add_option("--warmup", c.warmup, "Iterations run first and not measured (default 2)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{0}, kMaxBenchIterations));
  app.add_option("--trial-iterations", c.trial_iterations,
                 fmt::format("adaptive: iterations each candidate is timed for (default {})", c.trial_iterations))
      ->type_name("N")
      ->check(CLI::Range(1, 1000));
  app.add_option("--window", c.window, fmt::format("adaptive: iterations per drift check (default {})", c.window))
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--drift-margin", c.drift_margin,
                 fmt::format("adaptive: a layer whose window mean moved by more than this fraction is timed again "
                             "(default {})",
                             c.drift_margin))
      ->type_name("FRACTION")
      ->check(readableRange(1e-6, 1e6));
  app.add_option("--json", c.json_path, "Workers: also write the results as JSON to FILE")->type_name("FILE");
  app.add_option("--run-timeout", c.run_timeout_s,
                 "Servers: give up when the workers are not all done after this many seconds (default 0: no limit)")
      ->type_name("SECONDS")
      ->check(readableRange(0, std::numeric_limits<int>::max()));
  app.add_option("--event-iteration", c.event_iteration,
                 "Worker 0 runs --event-command before this iteration (1-based, warm-up included; default 0: never)")
      ->type_name("N")
      ->check(CLI::Range(uint64_t{1}, 2 * kMaxBenchIterations));
  app.add_option(
         "--event-command", c.event_command,
         "A shell command worker 0 runs before --event-iteration (e.g. a tc change that lowers a link); the run "
         "fails if it exits non-zero")
      ->type_name("COMMAND");
  app.add_option("--cost-link-bps", c.links.bits_per_s,
                 "Workers: price each layer with the cost model on links of this rate (bits/s, one direction, as "
                 "measured, e.g. by iperf3) and print it beside the measured time (default 0: no model)")
      ->type_name("BITS")
      ->check(readableRange(0.0, 1e15));
  app.add_option("--cost-latency-us", c.model_latency_us,
                 "Workers: the model's one-way latency per message (microseconds, as measured, e.g. poseidon-perf "
                 "write_lat's t_typical, which is already one way; default 0)")
      ->type_name("MICROS")
      ->check(readableRange(0.0, 1e9));
  app.add_option("--cost-slow-worker-bps", c.links.slow_worker_bits_per_s,
                 "Workers: worker P1-1's link rate when it is lower than --cost-link-bps (bits/s; default 0: the same)")
      ->type_name("BITS")
      ->check(readableRange(0.0, 1e15));
  app.add_option("--cost-slow-worker-direction", c.slow_worker_direction,
                 "Workers: which way worker P1-1's link is lower: both (default) or up (its sends only)")
      ->type_name("both|up")
      ->check(CLI::IsMember({"both", "up"}));
  app.final_callback([&app, &c] {
    c.links.latency_s = c.model_latency_us * 1e-6;
    c.links.slow_worker_upload_only = c.slow_worker_direction == "up";
    auto model = model::parseModelSpec(c.layer_spec);
    if (!model) throw CLI::ValidationError("--layers", model.status().message());
    if (app.count("--batch") == 0 && model->batch() != 1) {
      if (model->batch() > static_cast<uint64_t>(kMaxBatch)) {
        throw CLI::ValidationError(
            "--layers", fmt::format("batch K = {} of model '{}' exceeds {}", model->batch(), c.layer_spec, kMaxBatch));
      }
      c.batch = static_cast<int64_t>(model->batch());
    }
    c.model = model->withBatch(static_cast<uint64_t>(c.batch));
    c.job.model_spec = model::formatModelSpec(trainer::hybridPsModel(c.model.layers()));
  });
}

std::string checkBenchOptions(HybBenchCommandLine& c) {
  if ((c.event_iteration > 0) != !c.event_command.empty()) {
    return fmt::format("--event-iteration {} and --event-command '{}': expected both or neither", c.event_iteration,
                       c.event_command);
  }
  if (c.event_iteration > c.warmup + c.iterations) {
    return fmt::format("--event-iteration {}: expected at most --warmup + --iterations = {}", c.event_iteration,
                       c.warmup + c.iterations);
  }
  if (c.mode == "adam" && c.adam_servers == 0) return "--mode adam needs --adam-servers >= 1";
  c.hybcomm = hybcommOptions(c);
  auto hybcomm = trainer::HybComm::create(c.model.layers(), {c.workers(), c.psServers(), c.batch}, c.hybcomm);
  if (!hybcomm)
    return fmt::format("--mode {} with --layers '{}': {}", c.mode, c.layer_spec, hybcomm.status().message());
  c.schemes = schemesInUse(*hybcomm, c.hybcomm);
  if (c.job.optimizer.sum_only) return "--optimizer sum: expected the workers' optimizer (the PS servers only sum)";
  return {};
}

}  // namespace poseidon::tools
