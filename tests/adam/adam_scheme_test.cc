// The Adam scheme over real in-process TCP contexts: P1 workers push random sufficient factors
// of layers with odd shapes for several iterations; every worker ends each iteration with a G that
// is bit-identical on all of them, bit-identical to the rank-order FMA sum, and within a derived
// bound of the exact sum; both sides count exactly the cost model's traffic. A silent worker, one
// that disconnects, and rogue immediates end in failures that name the culprit, never in a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "adam/adam_protocol.h"
#include "adam/adam_server.h"
#include "adam/adam_worker.h"
#include "tests/support/mesh.h"
#include "trainer/hybcomm/cost_model.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::adam {
namespace {

using namespace std::chrono_literals;

// A fully-connected model layer without bias: the scheme syncs the M x N weight.
model::Layer fc(const char* name, size_t rows, size_t cols) {
  return model::Layer::fullyConnected(name, rows, cols, false);
}

// What the reference sums below read of a layer: its name, M, N and the batch K.
struct Factored {
  std::string name;
  size_t rows = 0;
  size_t cols = 0;
  size_t rank = 0;
};
Factored factored(const model::Layer& layer, uint64_t batch) {
  return {layer.name(), layer.fc().rows, layer.fc().cols, batch};
}

// A connected mesh of in-process TCP contexts and a store of its own for the Adam job.
struct Cluster {
  testing::Mesh mesh;
  std::unique_ptr<transport::bootstrap::FileStore> store;
};

Result<Cluster> makeCluster(int ranks, const std::string& name) {
  auto mesh = testing::makeMesh(ranks, transport::DeviceOptions{}, name);
  if (!mesh) return mesh.status();
  auto store = transport::bootstrap::FileStore::open(mesh->dir->path() + "/adam-store");
  if (!store) return store.status();
  return Cluster{std::move(*mesh), std::move(*store)};
}

// One worker's U and V of one layer in one iteration, U then V as in the worker's factor buffer.
std::vector<float> randomFactors(const Factored& layer, int worker, size_t l, int iteration) {
  std::mt19937 rng(static_cast<uint32_t>(1000003 * worker + 1009 * static_cast<int>(l) + iteration));
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> factors(layer.rank * (layer.rows + layer.cols));
  for (float& f : factors) f = value(rng);
  return factors;
}

// g = 0; for p: for k: g = fma(U_p[i][k], V_p[j][k], g), written out as kernels/sf_update.h states it.
std::vector<float> rankOrderFmaSum(const Factored& layer, const std::vector<std::vector<float>>& factors) {
  std::vector<float> g(layer.rows * layer.cols);
  for (size_t i = 0; i < layer.rows; ++i) {
    for (size_t j = 0; j < layer.cols; ++j) {
      float sum = 0.0f;
      for (const std::vector<float>& f : factors) {
        const float* v = f.data() + layer.rows * layer.rank;
        for (size_t k = 0; k < layer.rank; ++k) sum = std::fma(f[i * layer.rank + k], v[j * layer.rank + k], sum);
      }
      g[i * layer.cols + j] = sum;
    }
  }
  return g;
}

// Every element within the bound of a sum of n = P * K products each rounded once, in sequence:
// |fl - exact| <= gamma_n * sum |u v| with gamma_n = n u / (1 - n u), u = 2^-24 (Higham, 3.1).
// The double reference itself errs by at most n 2^-53 sum |u v| (products of floats are exact in
// double), and a rounding that underflows errs by up to 2^-150 however small the sum: both added.
void expectNearExact(const Factored& layer, const std::vector<std::vector<float>>& factors, std::span<const float> g,
                     const std::string& what) {
  const double n = static_cast<double>(factors.size() * layer.rank);
  const double unit = std::ldexp(1.0, -24);
  const double gamma = n * unit / (1 - n * unit) + n * std::ldexp(1.0, -53);
  for (size_t i = 0; i < layer.rows; ++i) {
    for (size_t j = 0; j < layer.cols; ++j) {
      double exact = 0, magnitude = 0;
      for (const std::vector<float>& f : factors) {
        const float* v = f.data() + layer.rows * layer.rank;
        for (size_t k = 0; k < layer.rank; ++k) {
          const double term = double{f[i * layer.rank + k]} * double{v[j * layer.rank + k]};
          exact += term;
          magnitude += std::fabs(term);
        }
      }
      ASSERT_LE(std::fabs(double{g[i * layer.cols + j]} - exact), gamma * magnitude + n * std::ldexp(1.0, -150))
          << what << " element (" << i << ", " << j << ")";
    }
  }
}

bool sameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// A job of P1 workers and S servers, a thread per rank, on one in-process TCP mesh.
struct AdamRun {
  int workers = 2;
  int servers = 1;
  std::vector<model::Layer> layers;
  uint64_t batch = 2;  // K
  AdamServerOptions options;
  // Worker p's part, given its started worker (it may reset it, and the mesh's context, to leave).
  std::function<Status(int, std::unique_ptr<AdamWorker>&, testing::Mesh&)> worker;
  // Rank `rogue_rank` runs `rogue` instead of an AdamWorker (a worker rank), or after starting its
  // AdamServer (a server rank).
  int rogue_rank = -1;
  std::function<Status(transport::Context&, transport::bootstrap::Store&)> rogue;
  // How long servers wait for goodbyes once every worker's part has returned.
  std::chrono::milliseconds settle = 10s;
  // Looks at server s after it is done, before it is destroyed.
  std::function<void(int, AdamServer&)> inspect;
};

struct Outcome {
  std::vector<Status> workers;
  std::vector<Status> servers;  // waitUntilDone's
};

Outcome runAdam(const AdamRun& run) {
  const int size = run.workers + run.servers;
  Outcome out{std::vector<Status>(static_cast<size_t>(run.workers)),
              std::vector<Status>(static_cast<size_t>(run.servers))};
  auto cluster = makeCluster(size, "adam");
  if (!cluster) {
    ADD_FAILURE() << cluster.status().toString();
    return out;
  }
  testing::Mesh& mesh = cluster->mesh;
  transport::bootstrap::Store& store = *cluster->store;
  const Deadline deadline = Deadline::after(60s);
  std::atomic<int> parts_left{run.workers};
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      transport::Context& context = mesh[rank];
      if (rank < run.workers) {
        Status& result = out.workers[static_cast<size_t>(rank)];
        if (rank == run.rogue_rank) {
          result = run.rogue(context, store);
        } else if (auto worker = AdamWorker::start(context, store, run.layers, run.batch, run.workers, deadline);
                   worker) {
          result = run.worker(rank, *worker, mesh);
        } else {
          result = worker.status();
        }
        --parts_left;
        return;
      }
      const int s = rank - run.workers;
      auto server = AdamServer::start(context, store, run.layers, run.batch, run.workers, deadline, run.options);
      if (!server) {
        out.servers[static_cast<size_t>(s)] = server.status();
        return;
      }
      if (rank == run.rogue_rank) {
        const Status rogue = run.rogue(context, store);
        EXPECT_TRUE(rogue.isOk()) << rogue.toString();
      }
      Status status;
      do {
        status = (*server)->waitUntilDone(Deadline::after(20ms));
      } while (status.code() == StatusCode::kTimeout && parts_left.load() > 0);
      if (status.code() == StatusCode::kTimeout) status = (*server)->waitUntilDone(Deadline::after(run.settle));
      out.servers[static_cast<size_t>(s)] = status;
      if (run.inspect) run.inspect(s, **server);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return out;
}

// push(l) then wait(l): the first failure of either.
Status pushAndWait(AdamWorker& worker, size_t l, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(worker.push(l));
  return worker.wait(l, deadline);
}

TEST(AdamReconstruction, IsTheRankOrderFmaSumToTheBitSignedZerosIncluded) {
  const model::Layer model_layer = fc("fc", 5, 7);
  const Factored layer = factored(model_layer, 3);
  std::vector<std::vector<float>> factors;
  for (int p = 0; p < 3; ++p) factors.push_back(randomFactors(layer, p, 0, 0));
  // Element (0, 0) sums to -0: the first product underflows to -0 (exact value -2^-200), every
  // later one is -0 (0 times a negative), and -0 + -0 stays -0. Onto +0 an SGD step would give +0.
  for (size_t p = 0; p < factors.size(); ++p) {
    float* u = factors[p].data();
    float* v = u + layer.rows * layer.rank;
    for (size_t k = 0; k < layer.rank; ++k) {
      u[k] = (p == 0 && k == 0) ? std::ldexp(1.0f, -100) : 0.0f;
      v[k] = (p == 0 && k == 0) ? -std::ldexp(1.0f, -100) : -1.0f;
    }
  }
  // Element (1, 1) cancels exactly to +0: U_0 V_0 = x, U_1 V_1 = -x, the rest zero.
  for (size_t p = 0; p < factors.size(); ++p) {
    float* u = factors[p].data() + 1 * layer.rank;
    float* v = factors[p].data() + layer.rows * layer.rank + 1 * layer.rank;
    for (size_t k = 0; k < layer.rank; ++k) {
      u[k] = (k == 0 && p < 2) ? 0.75f : 0.0f;
      v[k] = (k == 0 && p < 2) ? (p == 0 ? 1.5f : -1.5f) : 2.0f;
    }
  }
  std::vector<const float*> u, v;
  for (const auto& f : factors) {
    u.push_back(f.data());
    v.push_back(f.data() + layer.rows * layer.rank);
  }
  std::vector<float> g(layer.rows * layer.cols, 123.0f);
  ASSERT_TRUE(reconstructAdamGradient(model_layer, 3, u, v, g).isOk());
  const std::vector<float> expected = rankOrderFmaSum(layer, factors);
  EXPECT_TRUE(sameBits(g, expected));
  EXPECT_TRUE(std::signbit(g[0]) && g[0] == 0.0f) << g[0];
  EXPECT_TRUE(!std::signbit(g[1 * layer.cols + 1]) && g[1 * layer.cols + 1] == 0.0f) << g[1 * layer.cols + 1];
  expectNearExact(layer, factors, g, "reconstruction");
  // A buffer of the wrong size is refused, not overrun.
  std::vector<float> small(3);
  EXPECT_EQ(reconstructAdamGradient(model_layer, 3, u, v, small).code(), StatusCode::kInternal);
}

const std::vector<model::Layer> kOddLayers = {
    fc("fc_odd", 7, 5), fc("fc_wide", 3, 67), fc("fc_tall", 129, 1), fc("fc_one", 1, 1), fc("fc_mid", 33, 17),
};
constexpr uint64_t kOddBatch = 3;
constexpr int kIterations = 3;

struct Shape {
  int workers;
  int servers;
};

// Test names (ctest's too) show the shape, not the parameter's bytes.
void PrintTo(const Shape& shape, std::ostream* out) {
  *out << shape.workers << " workers, " << shape.servers << " servers";
}

class AdamSchemeTest : public ::testing::TestWithParam<Shape> {};

TEST_P(AdamSchemeTest, EveryWorkerGetsTheExactSumAndTrafficMatchesTheCostModel) {
  const int workers = GetParam().workers;
  const int servers = GetParam().servers;
  const auto& layers = kOddLayers;
  // received[p][iteration][l]: the G worker p saw.
  std::vector<std::vector<std::vector<std::vector<float>>>> received(
      static_cast<size_t>(workers),
      std::vector<std::vector<std::vector<float>>>(kIterations, std::vector<std::vector<float>>(layers.size())));
  std::vector<std::vector<scheme::Traffic>> worker_traffic(static_cast<size_t>(workers));
  std::vector<std::vector<scheme::Traffic>> server_traffic(static_cast<size_t>(servers));
  std::vector<std::vector<std::vector<float>>> server_last(static_cast<size_t>(servers));

  AdamRun run;
  run.workers = workers;
  run.servers = servers;
  run.layers = layers;
  run.batch = kOddBatch;
  run.worker = [&](int p, std::unique_ptr<AdamWorker>& worker, testing::Mesh&) -> Status {
    const Deadline deadline = Deadline::after(30s);
    for (int it = 0; it < kIterations; ++it) {
      for (size_t l = 0; l < layers.size(); ++l) {
        const std::vector<float> factors = randomFactors(factored(layers[l], kOddBatch), p, l, it);
        std::copy_n(factors.begin(), worker->u(l).size(), worker->u(l).begin());
        std::copy(factors.begin() + static_cast<std::ptrdiff_t>(worker->u(l).size()), factors.end(),
                  worker->v(l).begin());
        POSEIDON_RETURN_IF_ERROR(worker->push(l));
      }
      // Waited in reverse, as a forward pass would need them after backprop pushed them.
      for (size_t l = layers.size(); l-- > 0;) {
        POSEIDON_RETURN_IF_ERROR(worker->wait(l, deadline));
        const auto g = worker->gradient(l);
        received[static_cast<size_t>(p)][static_cast<size_t>(it)][l].assign(g.begin(), g.end());
      }
    }
    for (size_t l = 0; l < layers.size(); ++l) worker_traffic[static_cast<size_t>(p)].push_back(worker->traffic(l));
    return worker->finish(deadline);
  };
  run.inspect = [&](int s, AdamServer& server) {
    for (size_t l = 0; l < layers.size(); ++l) {
      server_traffic[static_cast<size_t>(s)].push_back(server.traffic(l));
      const auto g = server.gradient(l);
      server_last[static_cast<size_t>(s)].emplace_back(g.begin(), g.end());
      EXPECT_EQ(server.iterations(l), adamServerOf(l, servers) == s ? uint64_t{kIterations} : 0u) << l;
    }
  };
  const Outcome out = runAdam(run);
  for (const Status& status : out.workers) ASSERT_TRUE(status.isOk()) << status.toString();
  for (const Status& status : out.servers) ASSERT_TRUE(status.isOk()) << status.toString();

  for (int it = 0; it < kIterations; ++it) {
    for (size_t l = 0; l < layers.size(); ++l) {
      std::vector<std::vector<float>> factors;
      for (int p = 0; p < workers; ++p) factors.push_back(randomFactors(factored(layers[l], kOddBatch), p, l, it));
      const std::vector<float> expected = rankOrderFmaSum(factored(layers[l], kOddBatch), factors);
      const std::string what = layers[l].name() + " iteration " + std::to_string(it);
      for (int p = 0; p < workers; ++p) {
        EXPECT_TRUE(sameBits(received[static_cast<size_t>(p)][static_cast<size_t>(it)][l], expected))
            << what << " on worker " << p;
      }
      expectNearExact(factored(layers[l], kOddBatch), factors, received[0][static_cast<size_t>(it)][l], what);
      if (it == kIterations - 1) {
        EXPECT_TRUE(sameBits(server_last[static_cast<size_t>(adamServerOf(l, servers))][l], expected)) << what;
      }
    }
  }

  const double iterations = kIterations;
  for (size_t l = 0; l < layers.size(); ++l) {
    const model::Layer& shape = layers[l];
    const trainer::ClusterShape cluster{workers, servers, static_cast<int64_t>(kOddBatch)};
    const auto as_traffic = [&](const trainer::NodeTraffic& t) {
      return scheme::Traffic{
          .syncs = kIterations,
          .sent_bytes = static_cast<uint64_t>(iterations * t.sent_floats * sizeof(float)),
          .sent_messages = static_cast<uint64_t>(iterations * static_cast<double>(t.sent_messages)),
          .received_bytes = static_cast<uint64_t>(iterations * t.received_floats * sizeof(float)),
          .received_messages = static_cast<uint64_t>(iterations * static_cast<double>(t.received_messages))};
    };
    auto worker_model = trainer::adamWorkerTraffic(shape, cluster);
    auto server_model = trainer::adamServerTraffic(shape, cluster);
    ASSERT_TRUE(worker_model.isOk() && server_model.isOk());
    for (int p = 0; p < workers; ++p) {
      EXPECT_EQ(worker_traffic[static_cast<size_t>(p)][l], as_traffic(*worker_model))
          << layers[l].name() << " worker " << p;
    }
    for (int s = 0; s < servers; ++s) {
      const scheme::Traffic expected = adamServerOf(l, servers) == s ? as_traffic(*server_model) : scheme::Traffic{};
      EXPECT_EQ(server_traffic[static_cast<size_t>(s)][l], expected) << layers[l].name() << " server " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AdamSchemeTest,
                         ::testing::Values(Shape{2, 1}, Shape{3, 1}, Shape{4, 1}, Shape{2, 2}, Shape{3, 2},
                                           Shape{4, 2}),
                         [](const ::testing::TestParamInfo<Shape>& param_info) {
                           return "P" + std::to_string(param_info.param.workers) + "_S" +
                                  std::to_string(param_info.param.servers);
                         });

TEST(AdamFailures, OthersTimeOutNamingAWorkerThatNeverPushes) {
  std::atomic<int> waiting{2};
  std::vector<Status> waits(3);
  AdamRun run;
  run.workers = 3;
  run.layers = {fc("fc", 6, 4)};
  run.options.stall_notice = 100ms;
  run.settle = 300ms;
  run.worker = [&](int p, std::unique_ptr<AdamWorker>& worker, testing::Mesh&) -> Status {
    if (p == 1) {  // connected, silent, until the others have given up on it
      const Deadline bound = Deadline::after(20s);
      while (waiting.load() > 0 && !bound.expired()) std::this_thread::sleep_for(10ms);
      return Status::ok();
    }
    waits[static_cast<size_t>(p)] = pushAndWait(*worker, 0, Deadline::after(1500ms));
    --waiting;
    return Status::ok();
  };
  const Outcome out = runAdam(run);
  for (int p : {0, 2}) {
    const Status& st = waits[static_cast<size_t>(p)];
    EXPECT_EQ(st.code(), StatusCode::kTimeout) << st.toString();
    EXPECT_TRUE(contains(st, "worker " + std::to_string(p) + ": layer 0 'fc' iteration 0")) << st.toString();
    EXPECT_TRUE(contains(st, "no gradient from Adam server 0 (rank 3")) << st.toString();
    EXPECT_TRUE(contains(st, "still waits for the factors of worker 1 (rank 1)")) << st.toString();
  }
  // The server is still up, waiting for goodbyes that will not come, and says from whom.
  EXPECT_EQ(out.servers[0].code(), StatusCode::kTimeout) << out.servers[0].toString();
  EXPECT_TRUE(contains(out.servers[0], "workers 0, 1, 2 had not said goodbye")) << out.servers[0].toString();
}

TEST(AdamFailures, AWorkerThatDisconnectsIsNamedByTheServerAndTheOthers) {
  AdamRun run;
  run.workers = 3;
  run.layers = {fc("fc", 6, 4), fc("fc2", 3, 3)};
  run.worker = [&](int p, std::unique_ptr<AdamWorker>& worker, testing::Mesh& mesh) -> Status {
    POSEIDON_RETURN_IF_ERROR(pushAndWait(*worker, 0, Deadline::after(30s)));
    if (p == 1) {  // after one good iteration, worker 1 goes away with its connections
      worker.reset();
      mesh.contexts[1].reset();
      return Status::ok();
    }
    return pushAndWait(*worker, 0, Deadline::after(30s));
  };
  const Outcome out = runAdam(run);
  EXPECT_EQ(out.servers[0].code(), StatusCode::kConnectionError) << out.servers[0].toString();
  EXPECT_TRUE(contains(out.servers[0], "Adam server 0: worker 1 (rank 1")) << out.servers[0].toString();
  EXPECT_TRUE(contains(out.servers[0], "is gone")) << out.servers[0].toString();
  for (int p : {0, 2}) {
    const Status& st = out.workers[static_cast<size_t>(p)];
    EXPECT_EQ(st.code(), StatusCode::kConnectionError) << st.toString();
    EXPECT_TRUE(contains(st, "Adam server 0 (rank 3")) << st.toString();
    EXPECT_TRUE(contains(st, "gave up")) << st.toString();
    EXPECT_TRUE(contains(st, "worker 1 (rank 1")) << st.toString();
  }
}

// Buffers a rogue rank registers stay alive until the test ends: servers may still write to them.
struct RogueMemory {
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<std::unique_ptr<transport::MemoryRegion>> regions;

  Result<transport::MemoryRegion*> add(transport::Context& context, size_t bytes) {
    buffers.emplace_back(std::max<size_t>(bytes, 1));
    auto region = context.registerMemory(buffers.back().data(), buffers.back().size());
    if (!region) return region.status();
    regions.push_back(std::move(*region));
    return regions.back().get();
  }
};

struct Rogue {
  const char* name;
  bool from_server;                  // sent by server rank 3 rather than by worker 1
  std::vector<uint32_t> immediates;  // written to server 0 (rank 2), in order
  const char* expected;              // in server 0's failure and in the honest workers'
  // Honest workers push only once server 0 has failed: when the rogue's writes are legal in some
  // order of arrival (its second push would be, had worker 0's push completed iteration 0 first).
  bool after_failure = false;
};

// Speaks the wire (a rogue worker publishes buffers like any, since servers need them to start)
// but not the rules: writes rogue.immediates to server 0 (rank 2).
Status sendRogue(const Rogue& rogue, transport::Context& context, transport::bootstrap::Store& store,
                 const AdamRun& run, RogueMemory& memory) {
  const Deadline deadline = Deadline::after(30s);
  auto layout = AdamLayout::forContext(run.layers, run.batch, run.workers, context.size());
  if (!layout) return layout.status();
  auto local = memory.add(context, layout->gradientTotal() * sizeof(float));
  if (!local) return local.status();
  if (!rogue.from_server) {
    auto notices = memory.add(context, static_cast<size_t>(run.servers) * kAdamNoticeBytes);
    if (!notices) return notices.status();
    POSEIDON_RETURN_IF_ERROR(publishAdamWorker(store, context.name(), 1, *layout, **local, **notices));
  }
  auto slots = fetchAdamServers(store, context.name(), *layout, deadline);
  if (!slots) return slots.status();
  for (uint32_t imm : rogue.immediates) {
    POSEIDON_RETURN_IF_ERROR(context.pair(2).write(**local, 0, (*slots)[0], 0, 0, imm)->wait(deadline));
  }
  return Status::ok();
}

void waitFor(const std::atomic<bool>& flag, Deadline deadline) {
  while (!flag.load() && !deadline.expired()) std::this_thread::sleep_for(1ms);
}

uint32_t push(size_t layer, uint64_t iteration) { return encodeAdamImm(AdamToServer::kPush, layer, iteration); }

void PrintTo(const Rogue& rogue, std::ostream* out) { *out << rogue.name; }

class AdamRogueTest : public ::testing::TestWithParam<Rogue> {};

TEST_P(AdamRogueTest, IsRefusedNamingThePeer) {
  const Rogue& rogue = GetParam();
  RogueMemory memory;
  AdamRun run;
  run.workers = 2;
  run.servers = 2;  // layer 0 on server 0 (rank 2), layer 1 on server 1 (rank 3)
  run.layers = {fc("a", 3, 4), fc("b", 5, 2)};
  run.settle = 300ms;
  // Honest workers push only after the rogue's writes, and a second honest worker only after the
  // first failed, so no iteration of layer 0 can complete: each one's wait ends with the server's
  // notice, which every worker still connected receives.
  std::atomic<bool> rogue_sent{false}, first_failed{false}, server_failed{false};
  run.worker = [&](int p, std::unique_ptr<AdamWorker>& worker, testing::Mesh&) -> Status {
    const Deadline deadline = Deadline::after(30s);
    waitFor(rogue.after_failure ? server_failed : rogue_sent, deadline);
    if (p == 1) waitFor(first_failed, deadline);
    const Status status = pushAndWait(*worker, 0, deadline);
    first_failed = true;
    return status;
  };
  run.inspect = [&](int s, AdamServer&) {
    if (s == 0) server_failed = true;
  };
  run.rogue_rank = rogue.from_server ? 3 : 1;
  run.rogue = [&](transport::Context& context, transport::bootstrap::Store& store) -> Status {
    const Status sent = sendRogue(rogue, context, store, run, memory);
    rogue_sent = true;
    return sent;
  };
  const Outcome out = runAdam(run);
  const std::string culprit = rogue.from_server ? "from rank 3" : "worker 1 (rank 1";
  const Status& server = out.servers[0];
  EXPECT_EQ(server.code(), StatusCode::kProtocolError) << server.toString();
  EXPECT_TRUE(contains(server, culprit)) << server.toString();
  EXPECT_TRUE(contains(server, rogue.expected)) << server.toString();
  for (int p = 0; p < run.workers; ++p) {
    if (p == run.rogue_rank) continue;
    const Status& st = out.workers[static_cast<size_t>(p)];
    EXPECT_EQ(st.code(), StatusCode::kProtocolError) << st.toString();
    EXPECT_TRUE(contains(st, "Adam server 0 (rank 2")) << st.toString();
    EXPECT_TRUE(contains(st, culprit)) << st.toString();
    EXPECT_TRUE(contains(st, rogue.expected)) << st.toString();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Immediates, AdamRogueTest,
    ::testing::Values(
        Rogue{"layer_of_another_server", false, {push(1, 0)}, "a push of layer 1, which this server does not hold"},
        Rogue{"layer_out_of_range", false, {push(9000, 0)}, "a push of layer 9000, which this server does not hold"},
        Rogue{"wrong_iteration", false, {push(0, 5)}, "iteration low bits 5, expected iteration 0"},
        Rogue{"unknown_type", false, {3u << 30}, "type 3, expected push (0) or bye (1)"},
        Rogue{"push_before_gradient",
              false,
              {push(0, 0), push(0, 1)},
              "it pushed iteration 1 before the gradient of iteration 0 was sent",
              true},
        Rogue{"from_a_server", true, {push(0, 0)}, "that rank is not a worker of this job (workers are ranks 0..1)"}),
    [](const ::testing::TestParamInfo<Rogue>& param_info) { return std::string(param_info.param.name); });

// The other direction: a server whose gradient names another iteration is refused by the worker,
// naming the server, instead of being taken for this iteration's G.
TEST(AdamRogueServer, AGradientOfAnotherIterationIsRefusedNamingTheServer) {
  auto cluster = makeCluster(2, "adam-rogue-server");
  ASSERT_TRUE(cluster) << cluster.status().toString();
  const std::vector<model::Layer> layers = {fc("a", 3, 4)};
  const Deadline deadline = Deadline::after(30s);
  Status worker_status;
  std::thread worker_thread([&] {
    auto worker = AdamWorker::start(cluster->mesh[0], *cluster->store, layers, 2, 1, deadline);
    worker_status = worker ? pushAndWait(**worker, 0, deadline) : worker.status();
  });
  RogueMemory memory;
  auto layout = AdamLayout::forContext(layers, 2, 1, 2);
  ASSERT_TRUE(layout);
  auto slots = memory.add(cluster->mesh[1], layout->slotTotal(0) * sizeof(float));
  ASSERT_TRUE(slots);
  ASSERT_TRUE(publishAdamServer(*cluster->store, cluster->mesh[1].name(), 0, *layout, **slots).isOk());
  auto workers = fetchAdamWorkers(*cluster->store, cluster->mesh[1].name(), *layout, deadline);
  ASSERT_TRUE(workers) << workers.status().toString();
  auto pushed = cluster->mesh[1].pair(0).recvImm();
  ASSERT_TRUE(pushed->wait(deadline).isOk()) << pushed->status().toString();
  EXPECT_EQ(pushed->imm(), push(0, 0));
  const uint32_t wrong = encodeAdamImm(AdamToWorker::kGradient, 0, 7);
  EXPECT_TRUE(cluster->mesh[1].pair(0).write(**slots, 0, (*workers)[0].gradients, 0, 0, wrong)->wait(deadline).isOk());
  worker_thread.join();
  EXPECT_EQ(worker_status.code(), StatusCode::kProtocolError) << worker_status.toString();
  EXPECT_TRUE(contains(worker_status, "Adam server 0 (rank 1")) << worker_status.toString();
  EXPECT_TRUE(contains(worker_status, "gradient of layer 0 'a' for iteration low bits 7; expected iteration 0"))
      << worker_status.toString();
}

TEST(AdamMisuse, CallsOutOfOrderAreRefusedAndTheRunGoesOn) {
  AdamRun run;
  run.layers = {fc("fc", 4, 3)};
  std::vector<Status> refused;
  run.worker = [&](int p, std::unique_ptr<AdamWorker>& worker, testing::Mesh&) -> Status {
    const Deadline deadline = Deadline::after(30s);
    if (p == 0) {
      refused.push_back(worker->push(1));
      refused.push_back(worker->wait(0, deadline));
      POSEIDON_RETURN_IF_ERROR(worker->push(0));
      refused.push_back(worker->push(0));
      refused.push_back(worker->finish(deadline));
      POSEIDON_RETURN_IF_ERROR(worker->wait(0, deadline));
      POSEIDON_RETURN_IF_ERROR(worker->finish(deadline));
      refused.push_back(worker->push(0));
      return Status::ok();
    }
    POSEIDON_RETURN_IF_ERROR(pushAndWait(*worker, 0, deadline));
    return worker->finish(deadline);
  };
  const Outcome out = runAdam(run);
  for (const Status& status : out.workers) EXPECT_TRUE(status.isOk()) << status.toString();
  EXPECT_TRUE(out.servers[0].isOk()) << out.servers[0].toString();
  const std::vector<std::string> expected = {
      "push of layer 1; the Adam job has 1 layers", "wait for layer 0 'fc' before any push",
      "before wait() returned the gradient of iteration 0", "has not been waited for", "after finish()"};
  ASSERT_EQ(refused.size(), expected.size());
  for (size_t i = 0; i < refused.size(); ++i) {
    EXPECT_EQ(refused[i].code(), StatusCode::kInvalidArgument) << refused[i].toString();
    EXPECT_TRUE(contains(refused[i], expected[i])) << refused[i].toString();
  }
}

TEST(AdamMisuse, RolesShapesAndDifferentLayersAreRefusedAtStart) {
  auto cluster = makeCluster(2, "adam-start");
  ASSERT_TRUE(cluster) << cluster.status().toString();
  const std::vector<model::Layer> layers = {fc("fc", 4, 3)};
  const Deadline soon = Deadline::after(2s);
  auto server_on_worker = AdamServer::start(cluster->mesh[0], *cluster->store, layers, 2, 1, soon);
  EXPECT_TRUE(contains(server_on_worker.status(), "rank 0 is a worker")) << server_on_worker.status().toString();
  auto worker_on_server = AdamWorker::start(cluster->mesh[1], *cluster->store, layers, 2, 1, soon);
  EXPECT_TRUE(contains(worker_on_server.status(), "rank 1 is a server")) << worker_on_server.status().toString();
  auto no_server = AdamWorker::start(cluster->mesh[0], *cluster->store, layers, 2, 2, soon);
  EXPECT_TRUE(contains(no_server.status(), "leaving a rank for a server")) << no_server.status().toString();
  const std::vector<model::Layer> empty_cols = {fc("fc", 4, 0)};
  auto bad_shape = AdamWorker::start(cluster->mesh[0], *cluster->store, empty_cols, 2, 1, soon);
  EXPECT_TRUE(contains(bad_shape.status(), "layer 0 'fc' is 4 x 0 with rank 2")) << bad_shape.status().toString();
  auto no_batch = AdamWorker::start(cluster->mesh[0], *cluster->store, layers, 0, 1, soon);
  EXPECT_TRUE(contains(no_batch.status(), "batch K = 0")) << no_batch.status().toString();
  const std::vector<model::Layer> not_fc = {model::Layer::other("bn", 4, 4)};
  EXPECT_EQ(AdamLayout::build(not_fc, 2, 1, 1).status().message(),
            "Adam layer 0 'bn' is other, expected a fully-connected layer");
  EXPECT_EQ(AdamLayout::build(std::vector<model::Layer>(kAdamMaxLayers + 1, fc("x", 1, 1)), 1, 1, 1).status().code(),
            StatusCode::kInvalidArgument);
  const std::vector<model::Layer> huge = {fc("huge", SIZE_MAX / 2, 4)};
  EXPECT_TRUE(contains(AdamLayout::build(huge, 1, 1, 1).status(), "too large"))
      << AdamLayout::build(huge, 1, 1, 1).status().toString();

  // The server was given other layers: the worker learns it from the store, naming the server.
  // Here another batch K: the same layer, factors of another rank.
  Status server_status;
  std::thread server([&] {
    auto started = AdamServer::start(cluster->mesh[1], *cluster->store, layers, 3, 1, Deadline::after(10s));
    server_status = started.status();
  });
  auto worker = AdamWorker::start(cluster->mesh[0], *cluster->store, layers, 2, 1, Deadline::after(10s));
  server.join();
  EXPECT_EQ(worker.status().code(), StatusCode::kInvalidArgument) << worker.status().toString();
  EXPECT_TRUE(contains(worker.status(), "Adam server 0 was given other Adam layers")) << worker.status().toString();
  EXPECT_TRUE(contains(server_status, "Adam worker 0 was given other Adam layers")) << server_status.toString();
}

}  // namespace
}  // namespace poseidon::adam
