// SfBroadcast over in-process TCP meshes of P1 = 2, 3, 4 workers, one thread per worker and two
// threads per worker driving its layers, in orders that differ by worker and iteration:
// - every replica's parameters and optimizer state stay bit-identical (trainer::checkReplicas), and each
//   step on worker 0 matches the double-precision reference of the explicit update with
//   G = sum_p U_p V_p^T within updateTolerance(P * K) (tests/kernels/reference.h). Each step is
//   checked from the float values it started from, so the tolerance is one step's rounding
//   bound and does not grow with the iterations;
// - the per-layer counters equal n times trainer::sfbNodeTraffic() exactly;
// - a peer that never broadcasts makes update time out within its deadline naming that peer and
//   the layer (and the update succeeds once it does broadcast); a broken peer fails it promptly;
// - a broadcast of t + 1 before update t is refused; so are an update before its broadcast, an
//   unknown layer and a GPU placement;
// - a rogue immediate (unknown layer, iteration out of sequence, more than one ahead) is refused
//   naming the peer.
#include "sfb/sf_broadcast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <random>
#include <thread>

#include "sfb/sf_imm.h"
#include "sfb/sf_region_exchange.h"
#include "tests/kernels/reference.h"
#include "tests/kernels/update_case.h"
#include "tests/support/mesh.h"
#include "trainer/hybcomm/cost_model.h"
#include "trainer/sync/replica_check.h"
#include "transport/bootstrap/file_store.h"

namespace poseidon::sfb {
namespace {

using kernels::ElementRule;

constexpr auto kLong = std::chrono::seconds(60);

// Model layers (fully connected, no bias: SFB syncs the weight) of thin and square shapes, and
// the batch K every worker's factors have.
const std::vector<model::Layer> kLayers = {
    model::Layer::fullyConnected("fc_a", 37, 53, false), model::Layer::fullyConnected("fc_b", 128, 64, false),
    model::Layer::fullyConnected("fc_c", 1, 19, false), model::Layer::fullyConnected("fc_d", 23, 1, false),
    model::Layer::fullyConnected("fc_e", 9, 7, false)};
constexpr size_t kBatch = 5;

bool contains(const Status& status, const std::string& text) {
  return status.message().find(text) != std::string::npos;
}

// Worker `worker`'s factors of `layer` at iteration t: the same values wherever they are made.
void fillFactors(int worker, size_t layer, uint64_t t, std::span<float> u, std::span<float> v) {
  std::mt19937 gen(static_cast<uint32_t>(1000003u * static_cast<uint32_t>(worker) + 7919u * layer + 104729u * t + 17u));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& x : u) x = uniform(gen);
  for (float& x : v) x = uniform(gen);
}

// One layer's weights and optimizer state on one worker, plus worker 0's copy from before a step.
struct LayerData {
  explicit LayerData(const model::Layer& layer, size_t index)
      : params(layer.fc().rows * layer.fc().cols),
        state0(params.size()),
        state1(params.size()),
        before0(params.size()),
        before1(params.size()),
        before2(params.size()) {
    std::mt19937 gen(static_cast<uint32_t>(31 * index + 5));  // the same on every worker
    std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
    for (float& w : params) w = uniform(gen);
  }
  std::vector<float> params, state0, state1;
  std::vector<float> before0, before1, before2;  // params, state0, state1 before worker 0's step
};

struct TestMesh {
  explicit TestMesh(int workers) {
    auto made = testing::makeMesh(workers, transport::DeviceOptions{}, "sfb");
    if (!made) throw StatusError(made.status());
    mesh = std::move(*made);
    auto opened = transport::bootstrap::FileStore::open(mesh.dir->path() + "/sfb-store");
    if (!opened) throw StatusError(opened.status());
    store = std::move(*opened);
  }
  testing::Mesh mesh;
  std::unique_ptr<transport::bootstrap::FileStore> store;
};

// A worker thread's failures, reported by the test's thread after the join.
void expectOk(const Status& status, const std::string& what) {
  EXPECT_TRUE(status.isOk()) << what << ": " << status.toString();
}

// The double-precision reference of worker 0's step t on one layer: every worker's factors are
// made again, G[i][j] = sum_p sum_k U_p[i][k] V_p[j][k] summed exactly in double (each product of
// two floats is exact there), and the explicit update applied to the values before the step.
void checkStep(ElementRule rule, int workers, size_t l, uint64_t t, const LayerData& data) {
  const model::Layer& layer = kLayers[l];
  const size_t rows = layer.fc().rows, cols = layer.fc().cols, rank = kBatch;
  std::vector<std::vector<float>> us(static_cast<size_t>(workers)), vs(us.size());
  for (int p = 0; p < workers; ++p) {
    us[static_cast<size_t>(p)].resize(rows * rank);
    vs[static_cast<size_t>(p)].resize(cols * rank);
    fillFactors(p, l, t, us[static_cast<size_t>(p)], vs[static_cast<size_t>(p)]);
  }
  const kernels::ExactSums sums = [&](size_t i) {
    const size_t row = i / cols, col = i % cols;
    double sum = 0, sum_abs = 0;
    for (size_t p = 0; p < us.size(); ++p) {
      for (size_t k = 0; k < rank; ++k) {
        const double term = double{us[p][row * rank + k]} * double{vs[p][col * rank + k]};
        sum += term;
        sum_abs += std::abs(term);
      }
    }
    return std::pair<double, double>{sum, sum_abs};
  };
  kernels::expectMatchesReference(
      rule, kernels::testStep(rule, workers, t), data.params.size(), static_cast<size_t>(workers) * rank, sums,
      {data.before0.data(), data.before1.data(), data.before2.data()},
      {data.params.data(), data.state0.data(), data.state1.data()}, layer.name() + " step " + std::to_string(t));
}

struct TrainCase {
  int workers;
  ElementRule rule;
};

std::string trainCaseName(const ::testing::TestParamInfo<TrainCase>& info) {
  return kernels::ruleName(info.param.rule) + "_p" + std::to_string(info.param.workers);
}

class SfBroadcastTraining : public ::testing::TestWithParam<TrainCase> {};

TEST_P(SfBroadcastTraining, ReplicasStayIdenticalMatchTheReferenceAndCountTheModelsTraffic) {
  // Named copies, not a structured binding: lambdas below capture them (clang before 16 cannot).
  const int workers = GetParam().workers;
  const ElementRule rule = GetParam().rule;
  constexpr uint64_t kIterations = 6;
  constexpr uint64_t kMidCheck = 2;  // replicas compared in the middle of the run too
  TestMesh env(workers);
  const Deadline deadline = Deadline::after(kLong);

  auto work = [&](int w) {
    auto started = SfBroadcast::start(env.mesh[w], *env.store, kLayers, kBatch, deadline);
    if (!started) return expectOk(started.status(), "start on rank " + std::to_string(w));
    SfBroadcast& sfb = **started;
    std::vector<LayerData> data;
    for (size_t l = 0; l < kLayers.size(); ++l) data.emplace_back(kLayers[l], l);

    // Two threads per worker; which layers each drives, and in what order, depends on the worker
    // and the iteration, so the immediates of different layers interleave differently per pair.
    auto drive = [&](int thread) {
      std::vector<size_t> mine;
      for (size_t l = 0; l < kLayers.size(); ++l) {
        if ((l + static_cast<size_t>(w)) % 2 == static_cast<size_t>(thread)) mine.push_back(l);
      }
      for (uint64_t t = 0; t < kIterations; ++t) {
        std::vector<size_t> order = mine;
        if ((static_cast<uint64_t>(w) + t) % 2 == 1) std::reverse(order.begin(), order.end());
        for (size_t l : order) {
          fillFactors(w, l, t, sfb.u(l), sfb.v(l));
          expectOk(sfb.broadcast(l), "broadcast");
        }
        if (w % 2 == 1) std::reverse(order.begin(), order.end());
        for (size_t l : order) {
          LayerData& d = data[l];
          if (w == 0) {
            d.before0 = d.params;
            d.before1 = d.state0;
            d.before2 = d.state1;
          }
          const Status updated = sfb.update(l, d.params.data(), d.state0.data(), d.state1.data(),
                                            kernels::testStep(rule, workers, t), kernels::Place::cpu(), deadline);
          expectOk(updated, "update of " + kLayers[l].name());
          if (!updated.isOk()) return;
          if (w == 0) checkStep(rule, workers, l, t, d);
        }
        if (t == kMidCheck) {
          for (size_t l : mine) {
            expectOk(trainer::checkReplicas(*env.store, "mid/" + kLayers[l].name(), w, workers, t + 1, data[l].params,
                                            deadline),
                     "mid-run replica check");
          }
        }
      }
    };
    std::thread other(drive, 1);
    drive(0);
    other.join();

    for (size_t l = 0; l < kLayers.size(); ++l) {
      const model::Layer& layer = kLayers[l];
      EXPECT_EQ(sfb.iteration(l), kIterations);
      expectOk(trainer::checkReplicas(*env.store, layer.name() + "/params", w, workers, kIterations, data[l].params,
                                      deadline),
               "params");
      expectOk(trainer::checkReplicas(*env.store, layer.name() + "/state0", w, workers, kIterations, data[l].state0,
                                      deadline),
               "state0");
      expectOk(trainer::checkReplicas(*env.store, layer.name() + "/state1", w, workers, kIterations, data[l].state1,
                                      deadline),
               "state1");
      // Every worker's traffic is the cost model's per-node count, n times, to the byte.
      auto model =
          trainer::sfbNodeTraffic(layer, trainer::ClusterShape{workers, workers, static_cast<int64_t>(kBatch)});
      ASSERT_TRUE(model) << model.status().toString();
      const scheme::Traffic expected{kIterations, static_cast<uint64_t>(model->sent_floats * 4) * kIterations,
                                     static_cast<uint64_t>(model->sent_messages) * kIterations,
                                     static_cast<uint64_t>(model->received_floats * 4) * kIterations,
                                     static_cast<uint64_t>(model->received_messages) * kIterations};
      const scheme::Traffic got = sfb.traffic(l);
      EXPECT_EQ(got.syncs, expected.syncs) << layer.name() << " on rank " << w;
      EXPECT_EQ(got.sent_bytes, expected.sent_bytes) << layer.name() << " on rank " << w;
      EXPECT_EQ(got.sent_messages, expected.sent_messages) << layer.name() << " on rank " << w;
      EXPECT_EQ(got.received_bytes, expected.received_bytes) << layer.name() << " on rank " << w;
      EXPECT_EQ(got.received_messages, expected.received_messages) << layer.name() << " on rank " << w;
      EXPECT_EQ(static_cast<int64_t>(got.sent_messages + got.received_messages),
                model->messages() * static_cast<int64_t>(kIterations));  // 2(P1 - 1) per iteration
    }
    // The replicas did change: a check that always passes would pass on untouched parameters.
    LayerData fresh(kLayers[0], 0);
    EXPECT_NE(fresh.params, data[0].params);
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back(work, w);
  for (auto& t : threads) t.join();
}

INSTANTIATE_TEST_SUITE_P(Workers, SfBroadcastTraining,
                         ::testing::Values(TrainCase{2, ElementRule::kSgdMomentum}, TrainCase{2, ElementRule::kAdam},
                                           TrainCase{3, ElementRule::kSgdMomentum}, TrainCase{3, ElementRule::kAdam},
                                           TrainCase{4, ElementRule::kSgdMomentum}, TrainCase{4, ElementRule::kAdam}),
                         trainCaseName);

// One layer, one step of SGD with momentum on `sfb`'s worker.
struct OneLayer {
  OneLayer() : data(kLayers[0], 0) {}
  Status update(SfBroadcast& sfb, uint64_t t, Deadline deadline) {
    return sfb.update(0, data.params.data(), data.state0.data(), nullptr,
                      kernels::testStep(ElementRule::kSgdMomentum, 3, t), kernels::Place::cpu(), deadline);
  }
  LayerData data;
};

const std::vector<model::Layer> kOneLayer = {kLayers[0]};

TEST(SfBroadcastFailures, PeerThatNeverBroadcastsTimesOutNamingItAndTheLayerThenRecovers) {
  TestMesh env(3);
  const Deadline deadline = Deadline::after(kLong);
  constexpr auto kShort = std::chrono::milliseconds(300);
  std::barrier timed_out(3);
  auto work = [&](int w) {
    auto sfb = SfBroadcast::start(env.mesh[w], *env.store, kOneLayer, kBatch, deadline);
    if (!sfb) return expectOk(sfb.status(), "start");
    OneLayer layer;
    if (w != 2) {  // rank 2 stays silent until the others have timed out
      fillFactors(w, 0, 0, (*sfb)->u(0), (*sfb)->v(0));
      expectOk((*sfb)->broadcast(0), "broadcast");
      const auto begin = Clock::now();
      const Status late = layer.update(**sfb, 0, Deadline::after(kShort));
      const auto took = Clock::now() - begin;
      EXPECT_EQ(late.code(), StatusCode::kTimeout) << late.toString();
      EXPECT_TRUE(contains(late, "rank 2")) << late.toString();
      EXPECT_FALSE(contains(late, "rank " + std::to_string(1 - w)))
          << "only the silent peer is missing: " << late.toString();
      EXPECT_TRUE(contains(late, "layer 0 'fc_a'")) << late.toString();
      EXPECT_GE(took, kShort);
      EXPECT_LT(took, kShort + std::chrono::seconds(2));
      EXPECT_EQ((*sfb)->iteration(0), 0u);
    }
    timed_out.arrive_and_wait();
    if (w == 2) {
      fillFactors(w, 0, 0, (*sfb)->u(0), (*sfb)->v(0));
      expectOk((*sfb)->broadcast(0), "late broadcast");
    }
    // Called again after the timeout, the update resumes and completes.
    expectOk(layer.update(**sfb, 0, deadline), "update after the silent peer broadcast");
    EXPECT_EQ((*sfb)->iteration(0), 1u);
    expectOk(trainer::checkReplicas(*env.store, "recovered", w, 3, 1, layer.data.params, deadline), "replicas");
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) threads.emplace_back(work, w);
  for (auto& t : threads) t.join();
}

TEST(SfBroadcastFailures, BrokenPeerFailsTheUpdatePromptlyNamingIt) {
  TestMesh env(3);
  const Deadline deadline = Deadline::after(kLong);
  std::vector<std::unique_ptr<SfBroadcast>> sfbs(3);
  {
    std::vector<std::thread> threads;
    for (int w = 0; w < 3; ++w) {
      threads.emplace_back([&, w] {
        auto started = SfBroadcast::start(env.mesh[w], *env.store, kOneLayer, kBatch, deadline);
        if (!started) return expectOk(started.status(), "start");
        sfbs[static_cast<size_t>(w)] = std::move(*started);
      });
    }
    for (auto& t : threads) t.join();
  }
  ASSERT_TRUE(sfbs[0] && sfbs[1] && sfbs[2]);
  sfbs[2].reset();
  env.mesh.contexts[2].reset();  // rank 2 dies: its connections close
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      SfBroadcast& sfb = *sfbs[static_cast<size_t>(w)];
      OneLayer layer;
      fillFactors(w, 0, 0, sfb.u(0), sfb.v(0));
      // Whether the write to rank 2 already fails here depends on when the close is noticed.
      const Status sent = sfb.broadcast(0);
      EXPECT_TRUE(sent.isOk() || contains(sent, "rank 2")) << sent.toString();
      const auto begin = Clock::now();
      const Status st = layer.update(sfb, 0, deadline);
      EXPECT_EQ(st.code(), StatusCode::kConnectionError) << st.toString();
      EXPECT_TRUE(contains(st, "rank 2")) << st.toString();
      EXPECT_TRUE(contains(st, "'fc_a'")) << st.toString();
      EXPECT_LT(Clock::now() - begin, std::chrono::seconds(5));
    });
  }
  for (auto& t : threads) t.join();
  // Ranks 0 and 1 failed before waiting for each other's few hundred bytes; let them land before
  // the buffers are deregistered, or teardown logs a write into a region that is gone (harmless).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST(SfBroadcastFailures, BroadcastBeforeTheUpdateOfTheIterationIsRefused) {
  TestMesh env(2);
  const Deadline deadline = Deadline::after(kLong);
  auto work = [&](int w) {
    auto started = SfBroadcast::start(env.mesh[w], *env.store, kOneLayer, kBatch, deadline);
    if (!started) return expectOk(started.status(), "start");
    SfBroadcast& sfb = **started;
    OneLayer layer;

    const Status early_update = layer.update(sfb, 0, deadline);
    EXPECT_EQ(early_update.code(), StatusCode::kInvalidArgument) << early_update.toString();
    EXPECT_TRUE(contains(early_update, "before its broadcast")) << early_update.toString();
    const Status unknown = sfb.broadcast(1);
    EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument) << unknown.toString();
    EXPECT_TRUE(sfb.u(1).empty());

    for (uint64_t t = 0; t < 2; ++t) {
      fillFactors(w, 0, t, sfb.u(0), sfb.v(0));
      expectOk(sfb.broadcast(0), "broadcast");
      const Status again = sfb.broadcast(0);
      EXPECT_EQ(again.code(), StatusCode::kInvalidArgument) << again.toString();
      EXPECT_TRUE(contains(again, "layer 0 'fc_a' for iteration " + std::to_string(t + 1))) << again.toString();
      EXPECT_TRUE(contains(again, "update of iteration " + std::to_string(t))) << again.toString();
      const Status on_gpu =
          sfb.update(0, layer.data.params.data(), layer.data.state0.data(), nullptr,
                     kernels::testStep(ElementRule::kSgdMomentum, 2, t), kernels::Place::cuda(nullptr), deadline);
      EXPECT_EQ(on_gpu.code(), StatusCode::kUnavailable) << on_gpu.toString();
      // A bad argument leaves the iteration where it was: the update can be called again.
      const Status no_state =
          sfb.update(0, layer.data.params.data(), nullptr, nullptr, kernels::testStep(ElementRule::kSgdMomentum, 2, t),
                     kernels::Place::cpu(), deadline);
      EXPECT_EQ(no_state.code(), StatusCode::kInvalidArgument) << no_state.toString();
      EXPECT_EQ(sfb.iteration(0), t);
      expectOk(layer.update(sfb, t, deadline), "update");
      EXPECT_EQ(sfb.iteration(0), t + 1);
    }
    expectOk(trainer::checkReplicas(*env.store, "refusals", w, 2, 2, layer.data.params, deadline), "replicas");
    // Refused calls sent nothing: two iterations' worth of one write each way.
    const scheme::Traffic traffic = sfb.traffic(0);
    EXPECT_EQ(traffic.sent_messages, 2u);
    EXPECT_EQ(traffic.received_messages, 2u);
  };
  std::thread other(work, 1);
  work(0);
  other.join();
}

TEST(SfBroadcastStart, RefusesBadLayersAndPeersGivenOtherLayers) {
  const std::vector<model::Layer> empty_cols = {model::Layer::fullyConnected("w", 3, 0, false)};
  EXPECT_EQ(SfSlotLayout::build(empty_cols, 2, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SfSlotLayout::build(std::vector<model::Layer>{}, 2, 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SfSlotLayout::build(kLayers, kBatch, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SfSlotLayout::build(kLayers, 0, 2).status().message(),
            "SFB needs a batch K >= 1 (the factors' rank), got 0");
  const std::vector<model::Layer> conv = {kLayers[0], model::Layer::other("bn", 10, 10)};
  EXPECT_EQ(SfSlotLayout::build(conv, kBatch, 2).status().message(),
            "SFB layer 1 'bn' is other, expected a fully-connected layer (only those have sufficient factors)");
  const std::vector<model::Layer> huge_layer = {
      model::Layer::fullyConnected("huge", SIZE_MAX / 2, SIZE_MAX / 2, false)};
  const auto huge = SfSlotLayout::build(huge_layer, 4, 2);
  EXPECT_TRUE(contains(huge.status(), "'huge'")) << huge.status().toString();

  TestMesh env(2);
  const Deadline deadline = Deadline::after(std::chrono::seconds(20));
  // Rank 1 was configured with another batch size.
  Status statuses[2];
  std::thread one(
      [&] { statuses[1] = SfBroadcast::start(env.mesh[1], *env.store, kOneLayer, kBatch + 1, deadline).status(); });
  statuses[0] = SfBroadcast::start(env.mesh[0], *env.store, kOneLayer, kBatch, deadline).status();
  one.join();
  EXPECT_EQ(statuses[0].code(), StatusCode::kInvalidArgument) << statuses[0].toString();
  EXPECT_TRUE(contains(statuses[0], "rank 1 was given other SFB layers")) << statuses[0].toString();
  EXPECT_TRUE(contains(statuses[1], "rank 0 was given other SFB layers")) << statuses[1].toString();
}

// Every (layer, bank, owner, writer) slot lies inside the owner's receive buffer, starts on 64
// bytes and overlaps no other slot of the same owner.
TEST(SfBroadcastStart, SlotsLieApartInsideTheReceiveBuffer) {
  for (int workers = 1; workers <= 4; ++workers) {
    auto layout = SfSlotLayout::build(kLayers, kBatch, workers);
    ASSERT_TRUE(layout) << layout.status().toString();
    for (int owner = 0; owner < workers; ++owner) {
      std::vector<std::pair<size_t, size_t>> ranges;
      for (size_t l = 0; l < kLayers.size(); ++l) {
        for (uint64_t bank = 0; bank < 2; ++bank) {
          for (int writer = 0; writer < workers; ++writer) {
            if (writer == owner) continue;
            const size_t begin = layout->slotOffset(l, bank, owner, writer);
            EXPECT_EQ(begin % 16, 0u);
            ranges.emplace_back(begin, begin + layout->factorFloats(l));
          }
        }
      }
      std::sort(ranges.begin(), ranges.end());
      for (size_t i = 0; i < ranges.size(); ++i) {
        EXPECT_LE(ranges[i].second, layout->receiveFloats());
        if (i > 0) {
          EXPECT_LE(ranges[i - 1].second, ranges[i].first) << "slots overlap on owner " << owner;
        }
      }
      EXPECT_EQ(ranges.size(), kLayers.size() * 2 * static_cast<size_t>(workers - 1));
    }
    EXPECT_EQ(layout->sendOffset(kLayers.size() - 1) + layout->factorFloats(kLayers.size() - 1), layout->sendFloats());
  }
}

struct RogueCase {
  const char* name;
  std::vector<uint32_t> immediates;  // rank 1's raw writes into rank 0's receive buffer, in order
  size_t waited_layer;               // the layer rank 0 then updates
  const char* expected;              // in rank 0's failure
};

std::string rogueCaseName(const ::testing::TestParamInfo<RogueCase>& info) { return info.param.name; }

class SfBroadcastRogue : public ::testing::TestWithParam<RogueCase> {};

TEST_P(SfBroadcastRogue, RogueImmediateIsRefusedNamingThePeer) {
  const RogueCase& rogue = GetParam();
  const std::vector<model::Layer> layers = {kLayers[0], kLayers[4]};
  TestMesh env(2);
  const Deadline deadline = Deadline::after(kLong);
  std::barrier injected(2);
  // Kept until both threads are done, so that no write lands in a buffer already deregistered.
  std::vector<std::unique_ptr<SfBroadcast>> sfbs(2);
  // A raw write on rank 1's context, into rank 0's receive buffer as published, before any real one.
  auto inject = [&]() -> Status {
    auto value = env.store->get(sfRegionKey(*env.store, env.mesh[1].name(), 0), deadline);
    if (!value) return value.status();
    // The region exchange's value: a 16-byte header (transport/bootstrap/region_exchange.h), then
    // the descriptor.
    constexpr size_t kHeaderBytes = 16;
    if (value->size() < kHeaderBytes + transport::RemoteDescriptor::kEncodedSize) {
      return makeStatus(StatusCode::kProtocolError, "the published value has {} bytes", value->size());
    }
    auto remote = transport::RemoteDescriptor::parse(
        std::span<const uint8_t>(value->data() + kHeaderBytes, transport::RemoteDescriptor::kEncodedSize));
    if (!remote) return remote.status();
    testing::Buffer junk = testing::makeBuffer(env.mesh[1], 64);
    for (uint32_t imm : rogue.immediates) {
      POSEIDON_RETURN_IF_ERROR(env.mesh[1].pair(0).write(*junk.region, 0, *remote, 0, 4, imm)->wait(deadline));
    }
    return Status::ok();
  };
  auto work = [&](int w) {
    auto started = SfBroadcast::start(env.mesh[w], *env.store, layers, kBatch, deadline);
    if (w == 1) expectOk(started.isOk() ? inject() : started.status(), "injecting the rogue immediates");
    injected.arrive_and_wait();
    if (!started) return expectOk(started.status(), "start");
    SfBroadcast& sfb = **started;
    const size_t l = rogue.waited_layer;
    LayerData data(layers[l], l);
    auto update = [&](Deadline until) {
      return sfb.update(l, data.params.data(), data.state0.data(), nullptr,
                        kernels::testStep(ElementRule::kSgdMomentum, 2, 0), kernels::Place::cpu(), until);
    };
    fillFactors(w, l, 0, sfb.u(l), sfb.v(l));
    expectOk(sfb.broadcast(l), "broadcast");
    const Status st = update(deadline);
    sfbs[static_cast<size_t>(w)] = std::move(*started);
    if (w == 1) return expectOk(st, "the rogue's own update");  // rank 0 did broadcast its factors
    EXPECT_EQ(st.code(), StatusCode::kProtocolError) << st.toString();
    EXPECT_TRUE(contains(st, "rank 1")) << st.toString();
    EXPECT_TRUE(contains(st, rogue.expected)) << st.toString();
    // The failure is sticky: the peer is not read from again.
    const Status again = update(Deadline::after(std::chrono::seconds(1)));
    EXPECT_EQ(again.code(), StatusCode::kProtocolError) << again.toString();
  };
  std::thread other(work, 1);
  work(0);
  other.join();
}

INSTANTIATE_TEST_SUITE_P(
    Immediates, SfBroadcastRogue,
    ::testing::Values(
        RogueCase{"unknown_layer", {encodeSfImm(7, 0)}, 0, "naming layer 7; there are 2 layers"},
        RogueCase{"wrong_iteration", {encodeSfImm(0, 5)}, 0, "for iteration 5 (low 20 bits); expected iteration 0"},
        // Iterations 0 and 1 of layer 0 are in sequence and at most one ahead of
        // rank 0 (still at 0), iteration 2 is not: it would land in the bank in use.
        RogueCase{"two_ahead", {encodeSfImm(0, 0), encodeSfImm(0, 1), encodeSfImm(0, 2)}, 1, "at most one ahead"}),
    rogueCaseName);

}  // namespace
}  // namespace poseidon::sfb
