// SSP and asynchronous training through the Session: every layer through the parameter server,
// the optimizer on its servers (trainer/sync/server_optimized_sync.h).
//
// - SSP(0) reads at least what BSP reads, and ends where one process ends. The servers apply each
//   push as it arrives (ps/consistency.h), so the bits of a sum depend on the arrival order and a
//   read may already hold a peer's next update: SSP(0) is not BSP bit for bit. The test makes
//   every sum exact (small dyadic gradients, lr and 1/P powers of two), where any order gives the
//   same floats, so it can say exactly what each read may hold: after iteration i each layer
//   holds one process's parameters (SGD on the rank-ordered sum of the workers' gradients), or
//   those plus the peer's update of iteration i + 1; at the end exactly one process's. The same
//   job under BSP (HybComm fixed to the PS: the workers step on the servers' rank-order sum,
//   which equivalence_test.cc proves equal to one process for real gradients) must equal the
//   reference at every iteration. Exactness is what makes the comparison sound: a read one
//   version stale, a push lost or applied twice, a bias not formed from the factors' row sums
//   each change the floats.
// - SSP(s) lets a fast worker run ahead of a slow one by s iterations, never more (the versions
//   each sync left, and the iterations the slow worker had reported).
// - Async runs to the end and reduces the loss of a tiny CNN, and finishes without a lost worker.
// - A worker started with another consistency fails start-up naming it; options SSP rules out
//   are clear errors at join(); checkpoints without server checkpoints are refused naming what to
//   set (server_checkpoint_test.cc has them).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tests/trainer/api/session_job.h"
#include "tests/trainer/api/tiny_cnn.h"
#include "tools/train/batch_reader.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/reference/network_session.h"

namespace poseidon::testing {
namespace {

using trainer::LayerRegistration;

constexpr size_t kK = 2;  // batch
constexpr int kFcRows = 3, kFcCols = 4, kOther = 5;
constexpr float kLr = 0.25f;

trainer::SessionOptions psJob(int workers, const ps::Consistency& consistency) {
  trainer::SessionOptions options = psSessionOptions("consistency-test", workers, consistency);
  options.batch = kK;
  return options;
}

// One FC layer (3 x 4, bias) and one other layer of 5 floats, with gradients every worker can
// compute for any iteration: small multiples of 1/8, so sums and SGD steps are exact.
struct Toy {
  std::vector<float> fc_params = std::vector<float>(kFcRows * kFcCols + kFcRows);
  std::vector<float> x = std::vector<float>(kK * kFcCols), dy = std::vector<float>(kK * kFcRows);
  std::vector<float> other_params = std::vector<float>(kOther), other_grad = std::vector<float>(kOther);

  explicit Toy(float initial) {
    std::fill(fc_params.begin(), fc_params.end(), initial);
    std::fill(other_params.begin(), other_params.end(), initial);
  }
  // Worker w's factors and gradient of iteration i.
  void fill(int w, uint64_t i) {
    for (size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>((j + w + i) % 3) * 0.5f;
    for (size_t j = 0; j < dy.size(); ++j) dy[j] = static_cast<float>((j * 2 + w + 3 * i) % 5) * 0.25f - 0.5f;
    for (size_t j = 0; j < other_grad.size(); ++j) other_grad[j] = static_cast<float>((j + 2 * w + i) % 4) * 0.125f;
  }
  // The full gradient fill() gives: the weight sum_k dY[k][r] X[k][c], the bias sum_k dY[k][r].
  std::vector<float> fcGradient() const {
    std::vector<float> g(fc_params.size(), 0.0f);
    for (size_t k = 0; k < kK; ++k) {
      for (int r = 0; r < kFcRows; ++r) {
        for (int c = 0; c < kFcCols; ++c) g[r * kFcCols + c] += dy[k * kFcRows + r] * x[k * kFcCols + c];
        g[kFcRows * kFcCols + r] += dy[k * kFcRows + r];
      }
    }
    return g;
  }
  Status add(trainer::Session& session) {
    LayerRegistration fc;
    fc.name = "fc";
    fc.kind = model::LayerKind::kFullyConnected;
    fc.fc = {kFcRows, kFcCols, true};
    fc.params = fc_params;
    fc.input = x;
    fc.output_gradient = dy;
    POSEIDON_RETURN_IF_ERROR(session.addLayer(fc).status());
    LayerRegistration other;
    other.name = "scale";
    other.params = other_params;
    other.gradient = other_grad;
    return session.addLayer(other).status();
  }
  std::vector<float> snapshot() const {
    std::vector<float> all = fc_params;
    all.insert(all.end(), other_params.begin(), other_params.end());
    return all;
  }
};

// One iteration of a worker: wait for every layer (its forward pass), fill and report (backward).
Status toyIteration(trainer::Session& session, Toy& toy, int w, uint64_t i) {
  POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
  POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
  toy.fill(w, i);
  POSEIDON_RETURN_IF_ERROR(session.gradientReady(1));
  POSEIDON_RETURN_IF_ERROR(session.gradientReady(0));
  return session.endIteration();
}

constexpr int kWorkers = 2;
constexpr uint64_t kIterations = 6;
using Trajectory = std::vector<std::vector<float>>;  // parameters after each iteration

// Each worker's parameters after each iteration (read after that iteration's waits). `priority`:
// the workers reorder their pushes and the servers their answers (PushSchedule::priority).
std::vector<Trajectory> toyRun(const ps::Consistency& consistency, bool priority = false) {
  std::vector<Trajectory> runs(kWorkers);
  trainer::SessionOptions options = psJob(kWorkers, consistency);
  options.push.priority = priority;
  const auto statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
    Toy toy(w == 0 ? 1.0f : 7.0f);  // worker 0's parameters must reach every worker
    POSEIDON_RETURN_IF_ERROR(toy.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    for (uint64_t i = 0; i < kIterations; ++i) {
      POSEIDON_RETURN_IF_ERROR(toyIteration(session, toy, w, i));
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
      runs[static_cast<size_t>(w)].push_back(toy.snapshot());
    }
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "") << consistency.canonical();
  return runs;
}

// Worker w's full gradient of iteration i, every layer back to back (the FC weight and bias,
// then the other layer).
std::vector<float> toyGradient(int w, uint64_t i) {
  Toy worker(0.0f);
  worker.fill(w, i);
  std::vector<float> g = worker.fcGradient();
  g.insert(g.end(), worker.other_grad.begin(), worker.other_grad.end());
  return g;
}

// One process: SGD on the rank-ordered sum of the workers' gradients, scaled by 1/P.
Trajectory toyReference() {
  std::vector<float> all = Toy(1.0f).snapshot();
  Trajectory trajectory;
  for (uint64_t i = 0; i < kIterations; ++i) {
    std::vector<float> sum(all.size(), 0.0f);
    for (int w = 0; w < kWorkers; ++w) {
      const std::vector<float> g = toyGradient(w, i);
      for (size_t j = 0; j < sum.size(); ++j) sum[j] += g[j];
    }
    for (size_t j = 0; j < all.size(); ++j) all[j] -= kLr * (sum[j] / static_cast<float>(kWorkers));
    trajectory.push_back(all);
  }
  return trajectory;
}

bool sameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// SSP(0) reads version >= the clock, not exactly it: the servers apply each push as it arrives,
// so a pull answered after the peer has pushed its next iteration's gradient of the layer holds
// that update too (the peer cannot get further: its next pull needs this worker's next push).
// So after iteration i a layer holds the reference's parameters, or those plus the peer's update
// of iteration i + 1 — nothing staler, nothing else. Returns what it found, or "" when neither.
std::string sspZeroRead(std::span<const float> got, const Trajectory& reference, int peer, uint64_t i, size_t first,
                        size_t count) {
  std::span<const float> expected = std::span<const float>(reference[i]).subspan(first, count);
  if (sameBits(got, expected)) return "exact";
  if (i + 1 >= kIterations) return "";
  const std::vector<float> g = toyGradient(peer, i + 1);
  std::vector<float> fresher(expected.begin(), expected.end());
  for (size_t j = 0; j < count; ++j) fresher[j] -= kLr * (g[first + j] / static_cast<float>(kWorkers));
  return sameBits(got, fresher) ? "fresher" : "";
}

void expectSspZeroReads(const std::vector<Trajectory>& ssp, const std::vector<Trajectory>& bsp,
                        const Trajectory& reference) {
  const size_t fc = kFcRows * kFcCols + kFcRows;
  for (int w = 0; w < kWorkers; ++w) {
    const Trajectory& mine = ssp[static_cast<size_t>(w)];
    ASSERT_EQ(mine.size(), kIterations);
    ASSERT_EQ(bsp[static_cast<size_t>(w)].size(), kIterations);
    for (uint64_t i = 0; i < kIterations; ++i) {
      EXPECT_TRUE(sameBits(bsp[static_cast<size_t>(w)][i], reference[i])) << "BSP worker " << w << " iteration " << i;
      for (const auto& [first, count] : {std::pair<size_t, size_t>{0, fc}, {fc, kOther}}) {
        const std::span<const float> got = std::span<const float>(mine[i]).subspan(first, count);
        EXPECT_NE(sspZeroRead(got, reference, 1 - w, i, first, count), "")
            << "SSP(0) worker " << w << " iteration " << i << " floats [" << first << ", " << first + count
            << "): " << fmt::format("{}", fmt::join(got, " "));
      }
    }
    // No push comes after the last iteration: every worker ends with the one process's bits.
    EXPECT_TRUE(sameBits(mine.back(), reference.back())) << "SSP(0) worker " << w << " at the end";
  }
}

TEST(SessionConsistency, SspZeroReadsAtLeastWhatBspReadsAndEndsAsOneProcess) {
  const Trajectory reference = toyReference();
  expectSspZeroReads(toyRun(ps::Consistency::ssp(0)), toyRun(ps::Consistency::bsp()), reference);
  // The reference moved: a sync that updated nothing would fail above, not pass vacuously.
  EXPECT_FALSE(sameBits(reference.back(), Toy(1.0f).snapshot()));
}

// With priority the servers answer each worker's pulls nearest the input first, under SSP as under
// BSP (the workers announce it whatever the consistency): the same reads, the same end.
TEST(SessionConsistency, PriorityKeepsWhatSspAndBspRead) {
  expectSspZeroReads(toyRun(ps::Consistency::ssp(0), true), toyRun(ps::Consistency::bsp(), true), toyReference());
}

// Worker 1 sleeps every iteration; worker 0 may run ahead by the staleness bound and no more.
TEST(SessionConsistency, SspLetsAFastWorkerRunAheadByTheBoundAndNoMore) {
  constexpr uint32_t kStaleness = 2;
  constexpr uint64_t kSteps = 12;
  std::atomic<uint64_t> slow_reported{0};  // worker 1's iterations whose last report began
  uint64_t max_gap = 0, max_lead = 0, worst_lead = 0;
  std::mutex mutex;
  std::vector<std::pair<uint64_t, uint64_t>> fast_syncs;  // (iteration, version) of worker 0
  const auto statuses = runSessionJob(
      psJob(kWorkers, ps::Consistency::ssp(kStaleness)),
      [&](trainer::Session& session, int w) -> Status {
        Toy toy(1.0f);
        POSEIDON_RETURN_IF_ERROR(toy.add(session));
        POSEIDON_RETURN_IF_ERROR(session.start());
        for (uint64_t i = 0; i < kSteps; ++i) {
          POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
          POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
          if (w == 0) {
            // Both layers are at version >= i - s: worker 1 has pushed iteration i - s - 1 of
            // layer 0, which it reports last, so it began that report (counted before it).
            const uint64_t slow = slow_reported.load();
            max_gap = std::max(max_gap, i > slow ? i - slow : 0);
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(40));
          }
          toy.fill(w, i);
          POSEIDON_RETURN_IF_ERROR(session.gradientReady(1));
          if (w == 1) slow_reported.fetch_add(1);
          POSEIDON_RETURN_IF_ERROR(session.gradientReady(0));
          POSEIDON_RETURN_IF_ERROR(session.endIteration());
        }
        return session.finish();
      },
      [&](int rank, trainer::SessionOptions& mine) {
        if (rank != 0) return;
        mine.on_sync = [&](const trainer::SyncRecord& r) {
          std::lock_guard lock(mutex);
          fast_syncs.emplace_back(r.iteration, r.version);
        };
      });
  ASSERT_EQ(failures(statuses), "");
  ASSERT_EQ(fast_syncs.size(), 2 * kSteps);
  for (const auto& [iteration, version] : fast_syncs) {
    // After iteration i's sync the worker is at clock i + 1 and reads version >= i + 1 - s.
    const uint64_t lead = iteration + 1 > version ? iteration + 1 - version : 0;
    worst_lead = std::max(worst_lead, lead);
    if (lead <= kStaleness) max_lead = std::max(max_lead, lead);
  }
  EXPECT_LE(worst_lead, kStaleness) << "a sync left parameters staler than the bound";
  EXPECT_EQ(max_lead, kStaleness) << "the fast worker never ran ahead: SSP behaved like BSP";
  EXPECT_LE(max_gap, kStaleness) << "the fast worker began an iteration more than s ahead";
  EXPECT_EQ(max_gap, kStaleness);
}

TEST(SessionConsistency, AsyncRunsToTheEndAndReducesTheLoss) {
  auto set = trainer::data::loadFashionMnist(trainer::data::Split::kTrain);
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  constexpr size_t kBatch = 16;
  constexpr int kSteps = 60;
  trainer::SessionOptions options = psJob(kWorkers, ps::Consistency::async(2, 2));
  options.batch = kBatch;
  options.optimizer = kernels::parseOptimizer("sgd:lr=0.05").value();
  options.chunk_bytes = 64 << 10;
  std::vector<std::vector<float>> losses(kWorkers);
  const auto statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
    auto network = tinyCnn(kBatch, 100 + static_cast<uint64_t>(w));
    if (!network) return network.status();
    POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
    POSEIDON_RETURN_IF_ERROR(session.start());
    network->setHooks(trainer::reference::sessionHooks(session));
    auto reader = tools::BatchReader::create(*set, {5, kWorkers, static_cast<uint32_t>(w), kBatch});
    if (!reader) return reader.status();
    trainer::data::Position position;
    for (int s = 0; s < kSteps; ++s) {
      POSEIDON_RETURN_IF_ERROR(reader->read(position));
      auto loss = network->forward(reader->images(), reader->labels());
      if (!loss) return loss.status();
      losses[static_cast<size_t>(w)].push_back(static_cast<float>(loss->loss));
      POSEIDON_RETURN_IF_ERROR(network->backward());
      POSEIDON_RETURN_IF_ERROR(session.endIteration());
      position = reader->sharder().next(position);
    }
    return session.finish();
  });
  ASSERT_EQ(failures(statuses), "");
  for (int w = 0; w < kWorkers; ++w) {
    const std::vector<float>& l = losses[static_cast<size_t>(w)];
    ASSERT_EQ(l.size(), static_cast<size_t>(kSteps));
    double first = 0, last = 0;
    for (int s = 0; s < 10; ++s) {
      first += l[static_cast<size_t>(s)];
      last += l[static_cast<size_t>(kSteps - 1 - s)];
    }
    EXPECT_LT(last, 0.8 * first) << "worker " << w << ": mean loss of the first 10 steps " << first / 10
                                 << ", of the last 10 " << last / 10;
  }
}

// Async goes on without a worker whose connection broke, and so does the job's end: both servers
// saw worker 2 go, one of them arrives at the exit in its place, and every other rank's finish()
// succeeds (before, the exit barrier waited for worker 2 until the deadline).
TEST(SessionConsistency, AsyncFinishesWithoutALostWorkerAndEveryOtherRankSucceeds) {
  constexpr int kThree = 3;
  trainer::SessionOptions options = psJob(kThree, ps::Consistency::async(1, 1));
  const auto statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
    Toy toy(1.0f);
    POSEIDON_RETURN_IF_ERROR(toy.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    const uint64_t iterations = w == 2 ? 3 : 12;
    for (uint64_t i = 0; i < iterations; ++i) POSEIDON_RETURN_IF_ERROR(toyIteration(session, toy, w, i));
    // Worker 2 is lost: no finish(), its Session (and its connections) gone as the thread ends.
    if (w == 2) return makeStatus(StatusCode::kUnavailable, "worker 2 lost on purpose");
    return session.finish();
  });
  ASSERT_EQ(statuses.size(), 5u);
  for (size_t rank : {0u, 1u, 3u, 4u}) EXPECT_TRUE(statuses[rank].isOk()) << statuses[rank].toString();
  EXPECT_EQ(statuses[2].code(), StatusCode::kUnavailable) << statuses[2].toString();
}

TEST(SessionConsistency, AWorkerWithAnotherConsistencyFailsStartUpNamingIt) {
  trainer::SessionOptions options = psJob(kWorkers, ps::Consistency::ssp(1));
  options.startup_timeout = std::chrono::seconds(4);  // the servers wait for a PS job that never forms
  const auto statuses = runSessionJob(
      options,
      [](trainer::Session& session, int w) -> Status {
        Toy toy(1.0f);
        POSEIDON_RETURN_IF_ERROR(toy.add(session));
        (void)w;
        return session.start();
      },
      [](int rank, trainer::SessionOptions& mine) {
        if (rank == 1) mine.consistency = ps::Consistency::async();
      });
  for (int w = 0; w < kWorkers; ++w) {
    const std::string text = statuses[static_cast<size_t>(w)].toString();
    ASSERT_FALSE(statuses[static_cast<size_t>(w)].isOk()) << "worker " << w;
    EXPECT_NE(text.find("session.consistency"), std::string::npos) << text;
    EXPECT_NE(text.find("ssp:1"), std::string::npos) << text;
    EXPECT_NE(text.find("async:push=1,fetch=1"), std::string::npos) << text;
  }
}

TEST(SessionConsistency, OptionsSspRulesOutAreClearErrors) {
  trainer::SessionOptions closed_form = psJob(1, ps::Consistency::ssp(2));
  closed_form.hybcomm = trainer::HybCommOptions{};
  EXPECT_NE(joinError(closed_form).find("consistency ssp:2 sends every layer through the PS"), std::string::npos)
      << joinError(closed_form);
  EXPECT_NE(joinError(closed_form).find("hybcomm (closed form)"), std::string::npos);
  trainer::SessionOptions sfb = psJob(1, ps::Consistency::ssp(2));
  sfb.hybcomm.fixed = scheme::Scheme::kSfb;
  EXPECT_NE(joinError(sfb).find("hybcomm (fixed SFB) may pick another scheme: set hybcomm to fixed ps"),
            std::string::npos)
      << joinError(sfb);
  trainer::SessionOptions sum = psJob(1, ps::Consistency::async());
  sum.optimizer = kernels::parseOptimizer("sum").value();
  EXPECT_NE(joinError(sum).find("'sum' is not an optimizer"), std::string::npos) << joinError(sum);
  trainer::SessionOptions check = psJob(1, ps::Consistency::ssp(1));
  check.replica_check_every = 5;
  EXPECT_NE(joinError(check).find("replica_check_every 5 under consistency ssp:1"), std::string::npos)
      << joinError(check);
  trainer::SessionOptions bad = psJob(1, ps::Consistency::async(0, 1));
  EXPECT_NE(joinError(bad).find("SessionOptions::consistency"), std::string::npos) << joinError(bad);
}

TEST(SessionConsistency, CheckpointsUnderSspAreRefusedNamingWhatToUse) {
  const auto statuses = runSessionJob(psJob(1, ps::Consistency::ssp(0)), [](trainer::Session& session, int) -> Status {
    Toy toy(1.0f);
    POSEIDON_RETURN_IF_ERROR(toy.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    POSEIDON_RETURN_IF_ERROR(toyIteration(session, toy, 0, 0));
    const std::string save = session.saveCheckpoint("/nonexistent", {}).toString();
    EXPECT_NE(save.find("saveCheckpoint under consistency ssp:0"), std::string::npos) << save;
    EXPECT_NE(save.find("set SessionOptions::server_checkpoints"), std::string::npos) << save;
    const std::string restore = session.restoreCheckpoint("/nonexistent").status().toString();
    EXPECT_NE(restore.find("restoreCheckpoint under consistency ssp:0"), std::string::npos) << restore;
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "");
}

}  // namespace
}  // namespace poseidon::testing
