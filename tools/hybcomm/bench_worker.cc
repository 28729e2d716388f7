#include "tools/hybcomm/bench_worker.h"

#include <fmt/format.h>

#include <sys/wait.h>
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trainer/hybcomm/store_agreement.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::tools {

using scheme::Scheme;

namespace {

constexpr std::array<scheme::Scheme, 4> kSchemes = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kAdam,
                                                    scheme::Scheme::kRing};
constexpr double kUnused = -1.0;  // "not used" in an agreed vector (max keeps every real figure)

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Values in [-1, 1) from a 64-bit LCG seeded by (worker, iteration, layer): the same on every
// run, different per worker, iteration and layer.
void fillRandom(std::span<float> values, uint64_t seed) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
  for (float& x : values) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<float>(static_cast<double>(state >> 40) * (2.0 / 16777216.0) - 1.0);
  }
}

void fillLayer(trainer::HybridSync& sync, size_t layer, int worker, uint64_t iteration) {
  const uint64_t seed = (static_cast<uint64_t>(worker) << 48) ^ (iteration << 16) ^ (uint64_t{layer} << 1);
  if (!sync.u(layer).empty()) {
    fillRandom(sync.u(layer), seed);
    fillRandom(sync.v(layer), seed | 1);
  } else {
    fillRandom(sync.gradient(layer), seed);
  }
}

// --event-command: run through the shell, its output going where ours goes.
Status runEvent(const std::string& command, uint64_t iteration) {
  std::fflush(stdout);
  const int status = std::system(command.c_str());
  if (status == -1) {
    return makeStatus(StatusCode::kInternal, "--event-command '{}': cannot start a shell: {}", command,
                      std::strerror(errno));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return makeStatus(StatusCode::kInternal, "--event-command '{}' before iteration {}: expected exit 0, got {}",
                      command, iteration, WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : "a signal");
  }
  return Status::ok();
}

// Per layer and scheme over the measured iterations: this worker's sums.
struct LayerSums {
  uint64_t iterations = 0;
  double seconds = 0;
  double sent = 0;
  double received = 0;
};

}  // namespace

HybBenchReport describeBench(const HybBenchCommandLine& c, const HybridProcess& p) {
  HybBenchReport r;
  r.worker = p.rank();
  r.rank = p.rank();
  r.size = p.base.launch.size;
  r.workers = c.workers();
  r.ps_servers = c.psServers();
  r.adam_servers = c.adamServersInJob();
  r.batch = c.batch;
  r.mode = c.mode;
  r.mode_text = c.describeMode();
  r.layer_spec = c.layer_spec;
  r.optimizer = c.job.optimizer_spec;
  r.transport =
      fmt::format("{} {}, {} stream(s) per pair", c.job.backend, p.base.device->listenAddress(), c.job.streams);
  r.warmup = c.warmup;
  r.planned = c.iterations;
  r.links = c.links;
  r.event_iteration = c.event_iteration;
  r.event_command = c.event_command;
  const trainer::ClusterShape cluster{c.workers(), c.psServers(), c.batch};
  for (const model::Layer& layer : c.model.layers()) {
    r.layers.push_back({layer, {}, scheme::Scheme::kPs, modelSeconds(layer, cluster, c.links)});
  }
  return r;
}

Status runBenchWorker(const HybBenchCommandLine& c, HybridProcess& p, HybBenchReport& report) {
  trainer::HybridOptions options;
  options.workers = c.workers();
  options.ps_servers = c.psServers();
  options.adam_servers = std::max(c.adamServersInJob(), 1);
  options.chunk_bytes = c.job.chunk_bytes;
  options.optimizer = c.job.optimizer;
  options.hybcomm = c.hybcomm;
  options.name = c.job.job_name;
  auto started = trainer::HybridSync::start(p.contexts(), *p.base.store, c.model, options, p.deadline());
  if (!started) return started.status();
  trainer::HybridSync& sync = **started;

  const size_t layers = c.model.layers().size();
  std::vector<std::array<LayerSums, kSchemes.size()>> sums(layers);
  const auto slot = [](scheme::Scheme s) {
    return static_cast<size_t>(std::find(kSchemes.begin(), kSchemes.end(), s) - kSchemes.begin());
  };
  const uint64_t total = c.warmup + c.iterations;
  for (uint64_t t = 0; t < total; ++t) {
    if (t + 1 == c.event_iteration && p.rank() == 0) POSEIDON_RETURN_IF_ERROR(runEvent(c.event_command, t + 1));
    for (size_t l = 0; l < layers; ++l) fillLayer(sync, l, p.rank(), t);
    BenchIterationRecord it;
    it.after_event = c.event_iteration > 0 && t + 1 >= c.event_iteration;
    it.warmup = t < c.warmup;
    it.trial = sync.hybcomm().inTrial();
    it.schemes.resize(layers);
    const auto start = Clock::now();
    for (size_t l = layers; l-- > 0;) {
      auto result = sync.syncLayer(l, p.deadline());
      if (!result) return result.status();
      it.layer_seconds += result->seconds;
      it.schemes[l] = result->scheme;
      if (it.warmup) continue;
      LayerSums& s = sums[l][slot(result->scheme)];
      ++s.iterations;
      s.seconds += result->seconds;
      s.sent += static_cast<double>(result->bytes_sent);
      s.received += static_cast<double>(result->bytes_received);
    }
    it.seconds = secondsSince(start);
    report.iterations.push_back(std::move(it));
    POSEIDON_RETURN_IF_ERROR(sync.endIteration(p.deadline()).withContext(fmt::format("iteration {}", t + 1)));
  }

  // The slowest worker's figures: per iteration, then per layer and scheme (means over the same
  // iterations on every worker, since every worker uses the same schemes).
  std::vector<double> mine;
  for (const BenchIterationRecord& it : report.iterations) {
    mine.push_back(it.seconds);
    mine.push_back(it.layer_seconds);
  }
  for (size_t l = 0; l < layers; ++l) {
    for (const LayerSums& s : sums[l]) {
      const double n = static_cast<double>(s.iterations);
      mine.push_back(s.iterations > 0 ? s.seconds / n : kUnused);
      mine.push_back(s.iterations > 0 ? s.sent / n : kUnused);
      mine.push_back(s.iterations > 0 ? s.received / n : kUnused);
    }
  }
  // "<job>/bench-report/agree/...": a view of a view writes to the job's store itself, so the Agree outlives it.
  transport::bootstrap::StoreView job(*p.base.store, c.job.job_name);
  const trainer::Agree agree = trainer::storeAgreement(job, "bench-report", p.rank(), c.workers(), p.base.timeout);
  auto agreed = agree(mine);
  if (!agreed) return agreed.status().withContext("agreeing on the slowest worker's figures");
  size_t at = 0;
  for (BenchIterationRecord& it : report.iterations) {
    it.slowest_seconds = (*agreed)[at++];
    it.slowest_layer_seconds = (*agreed)[at++];
  }
  for (size_t l = 0; l < layers; ++l) {
    LayerRecord& record = report.layers[l];
    for (size_t s = 0; s < kSchemes.size(); ++s, at += 3) {
      if (sums[l][s].iterations == 0) continue;
      record.schemes.push_back(
          {kSchemes[s], sums[l][s].iterations, (*agreed)[at], (*agreed)[at + 1], (*agreed)[at + 2]});
    }
    if (!report.iterations.empty()) record.last_scheme = report.iterations.back().schemes[l];
  }
  report.choices = sync.hybcomm().choices();
  return sync.finish(p.deadline());
}

}  // namespace poseidon::tools
