#include "tests/trainer/hybrid_cluster.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "adam/adam_server.h"
#include "tests/support/mesh.h"
#include "trainer/sync/hybrid_ps.h"

namespace poseidon::testing {

bool HybridRun::ok() const {
  for (const Status& s : worker_status)
    if (!s.isOk()) return false;
  for (const Status& s : server_status)
    if (!s.isOk()) return false;
  return true;
}

std::string HybridRun::failures() const {
  std::string text;
  for (size_t i = 0; i < worker_status.size(); ++i) {
    if (!worker_status[i].isOk()) text += fmt::format("worker {}: {}\n", i, worker_status[i].toString());
  }
  for (size_t i = 0; i < server_status.size(); ++i) {
    if (!server_status[i].isOk()) text += fmt::format("server {}: {}\n", i, server_status[i].toString());
  }
  return text;
}

namespace {

float value(uint64_t seed) {
  // A small hash to a float in [-1, 1), with a wide spread of magnitudes.
  seed ^= seed >> 33;
  seed *= 0xff51afd7ed558ccdULL;
  seed ^= seed >> 33;
  const double unit = static_cast<double>(seed >> 11) / 9007199254740992.0;  // [0, 1)
  const double scale = (seed & 3) == 0 ? 1e-3 : 1.0;
  return static_cast<float>((2 * unit - 1) * scale);
}

}  // namespace

void fillGradient(trainer::HybridSync& sync, size_t layer, int worker, uint64_t iteration, int64_t) {
  const uint64_t base = (static_cast<uint64_t>(worker) << 48) ^ (iteration << 32) ^ (uint64_t{layer} << 24);
  if (!sync.u(layer).empty()) {
    auto u = sync.u(layer);
    auto v = sync.v(layer);
    for (size_t i = 0; i < u.size(); ++i) u[i] = value(base + 2 * i);
    for (size_t i = 0; i < v.size(); ++i) v[i] = value(base + 2 * i + 1);
  } else {
    auto g = sync.gradient(layer);
    for (size_t i = 0; i < g.size(); ++i) g[i] = value(base + i);
  }
}

HybridRun runHybrid(const HybridSpec& spec) {
  HybridRun run;
  const int workers = spec.workers;
  run.worker_status.assign(static_cast<size_t>(workers), Status::ok());
  run.server_status.assign(static_cast<size_t>(spec.ps_servers + spec.adam_servers), Status::ok());
  run.params.resize(static_cast<size_t>(workers));
  run.schemes.resize(static_cast<size_t>(workers));
  const auto fail = [&](const Status& status) {
    for (auto& s : run.worker_status) s = status;
    return run;
  };
  auto ps_mesh = makeMesh(workers + spec.ps_servers, {}, "hybrid-ps");
  if (!ps_mesh) return fail(ps_mesh.status());
  auto sfb_mesh = makeMesh(workers, {}, "hybrid-sfb");
  if (!sfb_mesh) return fail(sfb_mesh.status());
  auto ring_mesh = makeMesh(workers, {}, "hybrid-ring");
  if (!ring_mesh) return fail(ring_mesh.status());
  auto adam_mesh = makeMesh(workers + spec.adam_servers, {}, "hybrid-adam");
  if (!adam_mesh) return fail(adam_mesh.status());
  TempDir dir;
  auto store = transport::bootstrap::FileStore::open(dir.path() + "/store");
  if (!store) return fail(store.status());

  trainer::HybridOptions options;
  options.workers = workers;
  options.ps_servers = spec.ps_servers;
  options.adam_servers = spec.adam_servers;
  options.chunk_bytes = spec.chunk_bytes;
  options.optimizer = *kernels::parseOptimizer(spec.optimizer);
  options.hybcomm = spec.hybcomm;
  options.replica_check_every = 2;  // replicas compared through the store, whatever the build
  const Deadline deadline = Deadline::after(spec.deadline);

  const model::Model model("hybrid-test", spec.layers, static_cast<uint64_t>(spec.batch));
  auto in_use = trainer::schemesInUse(model, options);
  if (!in_use) return fail(in_use.status());
  const bool adam = std::find(in_use->begin(), in_use->end(), scheme::Scheme::kAdam) != in_use->end();
  std::vector<model::Layer> adam_layers;
  for (const auto& layer : spec.layers) {
    if (adam && layer.isFullyConnected()) adam_layers.push_back(layer);
  }
  std::vector<std::thread> threads;
  for (int s = 0; s < spec.ps_servers; ++s) {
    threads.emplace_back([&, s] {
      auto server = trainer::startSummationServer((*ps_mesh)[workers + s], **store, spec.layers, workers,
                                                  spec.ps_servers, spec.chunk_bytes, options.name, deadline);
      Status& status = run.server_status[static_cast<size_t>(s)];
      status = server ? (*server)->waitUntilDone(deadline) : server.status();
    });
  }
  for (int s = 0; s < spec.adam_servers && !adam_layers.empty(); ++s) {
    threads.emplace_back([&, s] {
      auto server =
          adam::AdamServer::start((*adam_mesh)[workers + s], **store, adam_layers, model.batch(), workers, deadline);
      Status& status = run.server_status[static_cast<size_t>(spec.ps_servers + s)];
      status = server ? (*server)->waitUntilDone(deadline) : server.status();
    });
  }
  run.bytes.assign(spec.layers.size(), 0);
  run.synced.resize(static_cast<size_t>(workers));
  run.worker_seconds.assign(static_cast<size_t>(workers), 0.0);
  const auto began = std::chrono::steady_clock::now();
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      const auto train = [&]() -> Status {
        trainer::HybridContexts contexts{&(*ps_mesh)[w], &(*sfb_mesh)[w], &(*ring_mesh)[w], &(*adam_mesh)[w]};
        auto sync = trainer::HybridSync::start(contexts, **store, spec.model_of ? spec.model_of(w, model) : model,
                                               options, deadline);
        if (!sync) return sync.status();
        auto& schemes = run.schemes[static_cast<size_t>(w)];
        for (uint64_t t = 0; t < spec.iterations; ++t) {
          schemes.emplace_back();
          const auto skipped = [&](size_t l) { return spec.skip && spec.skip(w, t, l); };
          const auto sync_deadline = [&] {
            return spec.sync_deadline.count() > 0 ? Deadline::after(spec.sync_deadline) : deadline;
          };
          const auto collect = [&](size_t l) -> Status {
            auto result = (*sync)->waitLayer(l, deadline);
            if (!result) return result.status();
            if (w == 0) run.bytes[l] += result->bytes_sent + result->bytes_received;
            run.synced[static_cast<size_t>(w)].push_back(l);
            return Status::ok();
          };
          // Backward order, as backpropagation produces them.
          for (size_t l = spec.layers.size(); l-- > 0;) {
            if (skipped(l)) continue;
            fillGradient(**sync, l, w, t, spec.batch);
            (void)(*sync)->startLayer(l, sync_deadline());  // a failure shows in waitLayer()
            if (spec.order == SyncOrder::kOneAtATime) POSEIDON_RETURN_IF_ERROR(collect(l));
          }
          if (spec.order == SyncOrder::kInFlightWaitForward) {
            for (size_t l = 0; l < spec.layers.size(); ++l) {
              if (!skipped(l)) POSEIDON_RETURN_IF_ERROR(collect(l));
            }
          } else if (spec.order == SyncOrder::kInFlightWaitBackward) {
            for (size_t l = spec.layers.size(); l-- > 0;) {
              if (!skipped(l)) POSEIDON_RETURN_IF_ERROR(collect(l));
            }
          }
          for (size_t l = 0; l < spec.layers.size(); ++l) schemes.back().push_back((*sync)->hybcomm().scheme(l));
          POSEIDON_RETURN_IF_ERROR((*sync)->endIteration(deadline));
        }
        for (size_t l = 0; l < spec.layers.size(); ++l) {
          auto p = (*sync)->params(l);
          run.params[static_cast<size_t>(w)].emplace_back(p.begin(), p.end());
        }
        if (w == 0) run.choices = (*sync)->hybcomm().choices();
        return (*sync)->finish(deadline);
      };
      run.worker_status[static_cast<size_t>(w)] = train();
      run.worker_seconds[static_cast<size_t>(w)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    });
  }
  for (auto& t : threads) t.join();
  for (int node = 0; node < workers; ++node) {
    uint64_t bytes = 0;
    const auto add = [&](const transport::PairTraffic& t) { bytes += t.bytes_sent + t.bytes_received; };
    for (int s = 0; s < spec.ps_servers; ++s) {
      if (s != node) add((*ps_mesh)[node].pair(workers + s).traffic());
    }
    if (node < spec.ps_servers) {
      for (int w = 0; w < workers; ++w) {
        if (w != node) add((*ps_mesh)[workers + node].pair(w).traffic());
      }
    }
    run.ps_node_bytes.push_back(bytes);
  }
  return run;
}

}  // namespace poseidon::testing
