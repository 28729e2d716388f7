// Parameter-server features beyond BSP: Downpour's n_push accumulation (bit-exact against a local
// loop), checkpoints on request, a resume under a different optimizer or without a clock common
// to every server refused by name, a fresh start beside an earlier run's checkpoints refused,
// checkpoints a slow disk made the server skip, and a clock in common that a lagging server's
// disk leaves all the same.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <iterator>
#include <thread>

#include "ps/checkpoint/checkpoint.h"
#include "tests/ps/held_disk.h"
#include "tests/ps/ps_cluster.h"
#include "tests/ps/ps_job_launch.h"
#include "tests/ps/synthetic_training.h"
#include "tests/support/timeouts.h"

namespace poseidon::testing {
namespace {

kernels::OptimizerConfig parse(const char* spec) { return *kernels::parseOptimizer(spec); }

TEST(PsFeatures, AsyncNPushSendsTheSumOfNPushGradientsEveryNPushClocks) {
  constexpr uint64_t kClocks = 20;
  ClusterSpec spec;
  spec.workers = 1;
  spec.servers = 2;
  spec.server.optimizer = parse("sgd:lr=0.05,momentum=0.9");
  spec.server.consistency = ps::Consistency::async(2, 1);
  spec.train = [&](ps::Client& client, int worker) {
    return trainWorker(client, {worker, kClocks, 3, true}, Deadline::after(std::chrono::seconds(30)));
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.worker_status[0].isOk()) << run.worker_status[0].toString();

  // By hand: the gradients of clocks 2k and 2k+1, both at the parameters of update k, summed.
  std::vector<float> params(run.worker_params[0].size()), first(params.size()), second(params.size());
  std::vector<float> velocity(params.size(), 0.0f);
  initialParameters(params);
  for (uint64_t k = 0; k < kClocks / 2; ++k) {
    syntheticGradient(0, 2 * k, params, first);
    syntheticGradient(0, 2 * k + 1, params, second);
    for (size_t i = 0; i < params.size(); ++i) second[i] += first[i];
    const float* gradient = second.data();
    kernels::ChunkUpdate update{params.data(),
                                velocity.data(),
                                nullptr,
                                params.size(),
                                std::span<const float* const>(&gradient, 1),
                                spec.server.optimizer.stepFor(k)};
    kernels::chunkUpdateCpu(update);
  }
  EXPECT_TRUE(sameBits(run.worker_params[0], params));
}

TEST(PsFeatures, CheckpointOnRequestThenResumeUnderAnotherOptimizerIsRefused) {
  TempDir dir;
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 1;
  spec.server.optimizer = parse("adam:lr=0.01");
  spec.server.checkpoint_dir = dir.path() + "/checkpoints";
  spec.train = [&](ps::Client& client, int worker) -> Status {
    if (worker == 0) POSEIDON_RETURN_IF_ERROR(client.requestCheckpoint(7));
    return trainWorker(client, {worker, 12, 5, true}, Deadline::after(spec.deadline));
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.server_status[0].isOk()) << run.server_status[0].toString();
  EXPECT_EQ(ps::listCheckpoints(spec.server.checkpoint_dir, 0), std::vector<uint64_t>{7});

  spec.server.optimizer = parse("adam:lr=0.02");
  spec.server.resume = true;
  spec.deadline = std::chrono::seconds(5);
  const ClusterRun refused = runCluster(spec);
  EXPECT_NE(refused.server_status[0].message().find("optimizer"), std::string::npos)
      << refused.server_status[0].toString();
  EXPECT_NE(refused.server_status[0].message().find("lr"), std::string::npos) << refused.server_status[0].toString();
}

// What every rank of a two-server, two-worker run ended with.
std::vector<Status> everyRankOf(const ClusterRun& run) {
  return {run.server_status[0], run.server_status[1], run.worker_status[0], run.worker_status[1]};
}

// Two workers, `servers` servers that checkpoint every clock into `dir` and keep every file.
ClusterSpec checkpointingEveryClock(const TempDir& dir, int servers) {
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = servers;
  spec.server.checkpoint_dir = dir.path() + "/checkpoints";
  spec.server.checkpoint_every = 1;
  spec.server.checkpoint_keep = 100;
  return spec;
}

// Files of no clock every server has (removed by hand here; servers that pruned each by its own
// files left such sets when one's disk lagged): a resume fails on every rank naming what each
// server has, instead of starting over from clock 0.
TEST(PsFeatures, AResumeWithNoClockCommonToEveryServerFailsOnEveryRankNamingTheClocks) {
  TempDir dir;
  ClusterSpec spec = checkpointingEveryClock(dir, 2);
  spec.train = [&](ps::Client& client, int worker) {
    return trainWorker(client, {worker, 12, 5, true}, Deadline::after(spec.deadline));
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.server_status[0].isOk() && run.server_status[1].isOk()) << run.server_status[0].toString();
  // As a lagging server 1 would leave them: server 0 keeps only its newest file, server 1 only its
  // oldest. Each takes clocks 1 and 2 at least (a checkpoint is skipped only while two earlier ones
  // wait for the disk, ps/checkpointer.h), so those are clock 1 and a later one.
  const std::string& checkpoints = spec.server.checkpoint_dir;
  const std::vector<uint64_t> server0_clocks = ps::listCheckpoints(checkpoints, 0);
  std::vector<uint64_t> server1_clocks = ps::listCheckpoints(checkpoints, 1);
  ASSERT_GE(server0_clocks.size(), 2u);
  ASSERT_GE(server1_clocks.size(), 2u);
  std::sort(server1_clocks.begin(), server1_clocks.end());
  const uint64_t kept0 = *std::max_element(server0_clocks.begin(), server0_clocks.end());
  const uint64_t kept1 = server1_clocks.front();
  ASSERT_NE(kept0, kept1);
  for (uint64_t clock : server0_clocks) {
    if (clock != kept0) std::filesystem::remove(ps::checkpointPath(checkpoints, 0, clock));
  }
  for (uint64_t clock : server1_clocks) {
    if (clock != kept1) std::filesystem::remove(ps::checkpointPath(checkpoints, 1, clock));
  }
  const std::string expected = fmt::format("server 0 has clock {}, server 1 has clock {}", kept0, kept1);

  spec.server.resume = true;
  spec.deadline = std::chrono::seconds(10);
  const ClusterRun refused = runCluster(spec);
  for (const Status& status : everyRankOf(refused)) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
    EXPECT_NE(status.message().find(expected), std::string::npos) << status.toString();
  }
}

// A job started again without resuming where the last one left its checkpoints: every rank fails
// at start, naming the directory, and the files stay (a fresh run beside them could later resume
// into the old run's clocks).
TEST(PsFeatures, AFreshStartBesideAnEarlierRunsCheckpointsFailsOnEveryRankAndLeavesThem) {
  TempDir dir;
  ClusterSpec spec = checkpointingEveryClock(dir, 2);
  spec.train = [&](ps::Client& client, int worker) {
    return trainWorker(client, {worker, 4, 5, true}, Deadline::after(spec.deadline));
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.server_status[0].isOk() && run.server_status[1].isOk()) << run.server_status[0].toString();
  const std::string& checkpoints = spec.server.checkpoint_dir;
  const std::vector<uint64_t> before0 = ps::listCheckpoints(checkpoints, 0),
                              before1 = ps::listCheckpoints(checkpoints, 1);
  ASSERT_FALSE(before0.empty());

  spec.deadline = std::chrono::seconds(10);
  const ClusterRun refused = runCluster(spec);
  const std::string expected =
      fmt::format("started without resuming, but server 0's directory '{}' holds", checkpoints);
  for (const Status& status : everyRankOf(refused)) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.toString();
    EXPECT_NE(status.message().find(expected), std::string::npos) << status.toString();
  }
  EXPECT_EQ(ps::listCheckpoints(checkpoints, 0), before0);
  EXPECT_EQ(ps::listCheckpoints(checkpoints, 1), before1);
}

// A checkpoint a server cannot take is told to the worker that asked, with the reason, instead
// of only appearing in the server's log.
TEST(PsFeatures, ACheckpointRefusedByAServerReachesTheWorkerWithItsReason) {
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 1;  // started without a checkpoint directory
  Status second_request;
  spec.train = [&](ps::Client& client, int worker) -> Status {
    if (worker == 0) POSEIDON_RETURN_IF_ERROR(client.requestCheckpoint(3));
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, 8, 5, false}, Deadline::after(spec.deadline)));
    // Every clock made a round trip to the server since, so its answer has arrived.
    if (worker == 0) second_request = client.requestCheckpoint(9);
    return client.finish(Deadline::after(spec.deadline));
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.worker_status[0].isOk()) << run.worker_status[0].toString();
  EXPECT_EQ(second_request.code(), StatusCode::kUnavailable) << second_request.toString();
  EXPECT_NE(second_request.message().find("server 0 (rank 2) did not checkpoint"), std::string::npos)
      << second_request.message();
  EXPECT_NE(second_request.message().find("no checkpoint directory"), std::string::npos) << second_request.message();
}

// A disk slower than the checkpoints come: the server skips what falls due while two snapshots
// wait for it (its memory stays bounded) and, once the disk is done with the write in progress,
// tells the workers once for all it skipped.
TEST(PsFeatures, CheckpointsSkippedWhileTheDiskIsBehindAreToldToTheWorkersOnce) {
  TempDir dir;
  HeldDisk disk;
  ClusterSpec spec = checkpointingEveryClock(dir, 1);
  spec.server.checkpoint_writer = disk.writer();
  Status refusal;
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(spec.deadline);
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, 8, 5, false}, deadline));
    if (worker == 0) {
      disk.open();
      // Each call asks for one more checkpoint, at a clock this job never reaches.
      for (int i = 0; i < 500 && refusal.isOk(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        refusal = client.requestCheckpoint(1000);
      }
    }
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  ASSERT_TRUE(run.server_status[0].isOk()) << run.server_status[0].toString();
  ASSERT_TRUE(run.worker_status[0].isOk()) << run.worker_status[0].toString();
  // Clock 1 went to the disk and 2 waited for it; every chunk had reached 2 before any reached 3
  // (BSP), so 3 to 8 found two snapshots waiting.
  EXPECT_EQ(disk.written(), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(refusal.code(), StatusCode::kUnavailable) << refusal.toString();
  EXPECT_NE(refusal.message().find("server 0 (rank 2) did not checkpoint (clock 8)"), std::string::npos)
      << refusal.message();
  EXPECT_NE(refusal.message().find("still writing the checkpoints before it, so it skipped this one"),
            std::string::npos)
      << refusal.message();
}

// Until server 0's and server 1's files are `server0` and `server1`, or a timeout naming them.
Status waitForCheckpoints(const std::string& dir, const std::vector<uint64_t>& server0,
                          const std::vector<uint64_t>& server1) {
  const Deadline deadline = Deadline::after(scaled(std::chrono::seconds(20)));
  for (;;) {
    const std::vector<uint64_t> files0 = ps::listCheckpoints(dir, 0);
    const std::vector<uint64_t> files1 = ps::listCheckpoints(dir, 1);
    if (files0 == server0 && files1 == server1) return Status::ok();
    if (deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "server 0 has checkpoints [{}] and server 1 [{}]", fmt::join(files0, ","),
                        fmt::join(files1, ","));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Servers skip different checkpoints (each is behind on its own disk), so none removes a file
// every server might yet have: a server whose disk lagged still leaves the job a clock to resume
// from, and what no server can still share goes once the workers say so. Each server keeps 1.
// Checkpoints at clocks 2, 4 and 6; server 1's disk holds its first file until 8 clocks are
// trained, so server 0 writes 2 and, with it undecided, skips 4 and 6, and server 1 skips them
// with 2 on its way to the disk. (Keeping each server's own newest file, as before, left nothing
// to resume from: server 0 had clock 12 and server 1 clock 2 in this test's first form.)
TEST(PsFeatures, AServerWhoseDiskLaggedStillLeavesEveryServerAClockToResumeFrom) {
  constexpr uint64_t kLagged = 8;
  constexpr uint64_t kLater = 12;
  constexpr uint64_t kClocks = 16;
  TempDir dir;
  HeldDisk slow(/*write_files=*/true);
  ClusterSpec spec = checkpointingEveryClock(dir, 2);
  spec.server.checkpoint_every = 0;  // on request only
  spec.server.checkpoint_keep = 1;
  spec.server.checkpoint_writer = [slow_writer = slow.writer()](const std::string& path,
                                                                const ps::CheckpointIdentity& identity,
                                                                const ps::CheckpointData& data) {
    return identity.server == 1 ? slow_writer(path, identity, data) : ps::writeCheckpoint(path, identity, data);
  };
  const std::string& checkpoints = spec.server.checkpoint_dir;
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(spec.deadline);
    if (worker == 0) {
      for (uint64_t clock : {2, 4, 6}) (void)client.requestCheckpoint(clock);
    }
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, kLagged, 5, false}, deadline));
    if (worker == 0) {
      // Server 1 writes 2: on both disks, committed. The servers hear it before this worker's
      // next pushes, so both are free again when clock 12 falls due.
      slow.open();
      while (client.committedCheckpoint() < 2) {
        if (deadline.expired()) return makeStatus(StatusCode::kTimeout, "clock 2 was never committed");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (ps::listCheckpoints(checkpoints, 0) != std::vector<uint64_t>{2}) {
        return makeStatus(StatusCode::kInternal, "server 0 has [{}], expected [2]",
                          fmt::join(ps::listCheckpoints(checkpoints, 0), ","));
      }
      (void)client.requestCheckpoint(kLater);
    }
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, kClocks, 5, false, kLagged}, deadline));
    if (worker == 0) {
      // 12 is committed on both, and 2 goes.
      POSEIDON_RETURN_IF_ERROR(waitForCheckpoints(checkpoints, {kLater}, {kLater}));
    }
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(run.server_status[s].isOk()) << run.server_status[s].toString();
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  ASSERT_EQ(ps::listCheckpoints(checkpoints, 0), std::vector<uint64_t>{kLater});
  ASSERT_EQ(ps::listCheckpoints(checkpoints, 1), std::vector<uint64_t>{kLater});

  // The resumed job (BSP) ends with the bits of one that never stopped.
  spec.server.resume = true;
  spec.server.checkpoint_writer = {};
  std::atomic<uint64_t> resumed_at{0};
  spec.train = [&](ps::Client& client, int worker) {
    if (worker == 0) resumed_at = client.startClock();
    return trainWorker(client, {worker, kClocks + 4, 5, true}, Deadline::after(spec.deadline));
  };
  const ClusterRun resumed = runCluster(spec);
  for (int w = 0; w < 2; ++w) ASSERT_TRUE(resumed.worker_status[w].isOk()) << resumed.worker_status[w].toString();
  EXPECT_EQ(resumed_at.load(), kLater);
  const std::vector<float> expected = referenceTraining(spec.server.optimizer, spec.workers, kClocks + 4);
  for (int w = 0; w < 2; ++w) EXPECT_TRUE(sameBits(resumed.worker_params[w], expected)) << "worker " << w;
}

// Layers that share a chunk, each pulled before the next one pushed: the chunk's pull must wait
// for the chunk's push (the server reads a pull's version against the pushes it has seen).
TEST(PsFeatures, PullsCalledBeforeANeighbourPushedStillGetTheNextVersion) {
  constexpr uint64_t kClocks = 10;
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 2;
  spec.server.optimizer = parse("sgd:lr=0.05,momentum=0.9");
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(30));
    std::span<float> params = client.allParameters();
    std::span<float> grads(client.gradients(0).data(), params.size());
    initialParameters(params);
    POSEIDON_RETURN_IF_ERROR(client.initialize(deadline));
    // A version beyond the layer's own pushes could never arrive: refused at once, by name.
    const auto impossible = client.pull(0, 5);
    if (!impossible->test() || impossible->status().message().find("version 5 needs pushes") == std::string::npos) {
      return makeStatus(StatusCode::kInternal, "pull(0, 5) at clock 0 gave: {}", impossible->status().toString());
    }
    std::vector<transport::RequestPtr> requests;
    for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.pull(l));
    for (uint64_t clock = 0; clock < kClocks; ++clock) {
      for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
      syntheticGradient(worker, clock, params, grads);
      requests.clear();
      // Pairs of layers: push(a), pull(a), pull(b) while b has not pushed, push(b); then all
      // again, since a pull before the layer's own push asks for the version at hand (and a
      // chunk travels once every layer in it asked).
      for (size_t a = 0; a + 1 < client.layerCount(); a += 2) {
        requests.push_back(client.push(a));
        requests.push_back(client.pull(a));
        requests.push_back(client.pull(a + 1));
        requests.push_back(client.push(a + 1));
      }
      for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
      requests.clear();
      for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.pull(l));
    }
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  const std::vector<float> expected = referenceTraining(spec.server.optimizer, spec.workers, kClocks);
  for (int w = 0; w < spec.workers; ++w) EXPECT_TRUE(sameBits(run.worker_params[w], expected)) << "worker " << w;
}

// A pull that times out says which worker the server is waiting for.
TEST(PsFeatures, APullThatTimesOutNamesTheWorkerItWaitsFor) {
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 1;
  Status timed_out;
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(30));
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, 2, 9, false}, deadline));
    if (worker == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // late with clock 2
    } else {
      std::vector<transport::RequestPtr> requests;
      for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.push(l));
      timed_out = client.wait(client.pull(0), Deadline::after(std::chrono::milliseconds(500)));
      for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
      return client.finish(deadline);
    }
    std::vector<transport::RequestPtr> requests;
    for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.push(l));
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  EXPECT_EQ(timed_out.code(), StatusCode::kTimeout) << timed_out.toString();
  EXPECT_NE(timed_out.message().find("waits for worker 1"), std::string::npos) << timed_out.toString();
}

// finish() does not wait for a pull that cannot complete: layer 0 shares its last chunk with
// layer 1, which never pulls, so that chunk is never asked for. Here finish() is called before
// any answer (worker 1 has not pushed yet), so the pull is still attached to the early pull of
// layer 0's first chunk; finish() waited for it until its deadline, where the answer happened to
// arrive late (one run in twelve of the test above).
TEST(PsFeatures, FinishDoesNotWaitForAPullOfAChunkItsOtherLayersNeverAskFor) {
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 1;
  std::promise<void> finishing;  // worker 0 is about to call finish(): worker 1 pushes only then
  const std::shared_future<void> finishing_seen = finishing.get_future().share();
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(30));
    POSEIDON_RETURN_IF_ERROR(trainWorker(client, {worker, 2, 9, false}, deadline));
    if (worker == 1) {
      if (finishing_seen.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        return makeStatus(StatusCode::kTimeout, "worker 0 never reached finish()");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // finish() has taken its list by then
    }
    std::vector<transport::RequestPtr> requests;
    for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.push(l));
    const transport::RequestPtr stuck = worker == 0 ? client.pull(0) : nullptr;
    if (worker == 0) finishing.set_value();
    const Status finished = client.finish(Deadline::after(std::chrono::seconds(10)));
    if (stuck && stuck->test()) {
      return makeStatus(StatusCode::kInternal, "the pull of layer 0 completed: {}", stuck->status().toString());
    }
    return finished;
  };
  const auto began = std::chrono::steady_clock::now();
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) EXPECT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(9));
}

// Pulls every layer, then waits: a chunk shared by two layers travels once both asked.
Status pullAll(ps::Client& client, Deadline deadline) {
  std::vector<transport::RequestPtr> pulls;
  for (size_t l = 0; l < client.layerCount(); ++l) pulls.push_back(client.pull(l));
  for (const auto& pull : pulls) POSEIDON_RETURN_IF_ERROR(client.wait(pull, deadline));
  return Status::ok();
}

// Two workers, one server, 4 KiB chunks and a push window of one chunk: every chunk but the first
// a worker makes ready waits in the window, where priority reorders.
ClusterSpec priorityCluster(bool priority) {
  ClusterSpec spec;
  spec.workers = 2;
  spec.servers = 1;
  spec.chunk_bytes = 4096;
  spec.server.optimizer = parse("sgd:lr=0.05");
  spec.client.push = {spec.chunk_bytes, priority};
  return spec;
}

// Worker 0's initial model reaches the servers and every worker before anyone pushes.
Status startFromWorker0(ps::Client& client, Deadline deadline) {
  initialParameters(client.allParameters());
  POSEIDON_RETURN_IF_ERROR(client.initialize(deadline));
  return pullAll(client, deadline);
}

// Priority: with a window of one chunk, worker 0 pushes its layers in backward order (the last
// first) while worker 1 holds back, so every chunk but the first waits in the window. Once worker 1
// pushes, the acks release worker 0's held chunks: with priority the first layer's chunks overtake
// the large fully-connected layer's, without it they go in the order they became ready.
class PsPriority : public ::testing::TestWithParam<bool> {};

TEST_P(PsPriority, TheLayerNearestTheInputOvertakesHeldChunksOnlyWithPriority) {
  const bool priority = GetParam();
  ClusterSpec spec = priorityCluster(priority);
  std::promise<void> worker0_pushed;
  std::shared_future<void> pushed = worker0_pushed.get_future().share();
  Clock::time_point first_layer_done{}, fc_layer_done{};
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(30));
    std::span<float> params = client.allParameters();
    std::span<float> grads(client.gradients(0).data(), params.size());
    POSEIDON_RETURN_IF_ERROR(startFromWorker0(client, deadline));
    syntheticGradient(worker, 0, params, grads);
    if (worker == 1) pushed.wait();
    std::vector<transport::RequestPtr> pushes(client.layerCount());
    for (size_t l = client.layerCount(); l-- > 0;) pushes[l] = client.push(l);
    if (worker == 0) worker0_pushed.set_value();
    for (const auto& push : pushes) POSEIDON_RETURN_IF_ERROR(client.wait(push, deadline));
    if (worker == 0) {
      first_layer_done = pushes[0]->completedAt();
      fc_layer_done = pushes[2]->completedAt();  // fc1: 9 of the model's 15 chunks
    }
    POSEIDON_RETURN_IF_ERROR(pullAll(client, deadline));
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  if (priority) {
    EXPECT_LT(first_layer_done, fc_layer_done) << "conv1 waited behind fc1 with priority on";
  } else {
    EXPECT_GT(first_layer_done, fc_layer_done) << "conv1 overtook fc1 with priority off";
  }
  // Either order aggregates the same sums: one SGD step from the initial parameters.
  const std::vector<float> expected = referenceTraining(spec.server.optimizer, spec.workers, 1);
  for (int w = 0; w < spec.workers; ++w) EXPECT_TRUE(sameBits(run.worker_params[w], expected)) << "worker " << w;
}

// Two workers that push in other orders: each one's first push goes out at once (its window is
// empty), so worker 0's window holds fc1's first chunk and worker 1's conv1's, whatever the timing,
// and every chunk after waits behind them; each ack needs the other's held chunk. The servers'
// announcements (ToWorker::kAwaited) send the awaited chunk past the full window. Without them
// this times out.
TEST(PsFeatures, WorkersWhosePriorityWindowsHoldWhatTheOtherWaitsForStillAggregate) {
  ClusterSpec spec = priorityCluster(true);
  spec.deadline = std::chrono::seconds(20);
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(10));
    std::span<float> params = client.allParameters();
    std::span<float> grads(client.gradients(0).data(), params.size());
    POSEIDON_RETURN_IF_ERROR(startFromWorker0(client, deadline));
    for (uint64_t clock = 0; clock < 3; ++clock) {
      syntheticGradient(worker, clock, params, grads);
      const std::vector<size_t> order = worker == 0 ? std::vector<size_t>{2, 3, 1, 0} : std::vector<size_t>{0, 1, 3, 2};
      std::vector<transport::RequestPtr> requests;
      for (size_t l : order) requests.push_back(client.push(l));
      for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.pull(l));
      for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    }
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  const std::vector<float> expected = referenceTraining(spec.server.optimizer, spec.workers, 3);
  for (int w = 0; w < spec.workers; ++w) EXPECT_TRUE(sameBits(run.worker_params[w], expected)) << "worker " << w;
}

INSTANTIATE_TEST_SUITE_P(OnAndOff, PsPriority, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& param_info) {
  return param_info.param ? "On" : "Off";
});

// "sum": the servers hand back each clock's rank-order sum of the workers' gradients, bit for bit
// (the workers run the optimizer themselves; HybComm relies on it).
TEST(PsFeatures, SumServersReturnTheRankOrderSumOfEachClocksGradients) {
  constexpr uint64_t kClocks = 4;
  ClusterSpec spec;
  spec.workers = 3;
  spec.servers = 2;
  spec.server.optimizer = parse("sum");
  spec.server.average = false;  // the plain sum (averaging would scale it by 1/P1 in the same pass)
  std::vector<std::string> mismatches(3);
  const auto gradient = [](int worker, uint64_t clock, size_t i) {
    // Values whose float sum rounds differently in another order.
    return static_cast<float>((static_cast<double>(i % 97) + 0.1) * (1.0 + worker * 1e-3 + clock * 0.37) *
                              (worker % 2 ? -1e-4 : 1.0));
  };
  spec.train = [&](ps::Client& client, int worker) -> Status {
    const Deadline deadline = Deadline::after(std::chrono::seconds(30));
    const size_t tensors = syntheticModel().tensors().size();
    // The protocol's first steps even with nothing to hold: worker 0 initialises, all wait for it.
    POSEIDON_RETURN_IF_ERROR(client.initialize(deadline));
    POSEIDON_RETURN_IF_ERROR(pullAll(client, deadline));
    for (uint64_t clock = 0; clock < kClocks; ++clock) {
      for (size_t t = 0; t < tensors; ++t) {
        auto g = client.gradients(t);
        for (size_t i = 0; i < g.size(); ++i) g[i] = gradient(worker, clock, i + t);
      }
      std::vector<transport::RequestPtr> requests;
      for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.push(l));
      for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
      POSEIDON_RETURN_IF_ERROR(pullAll(client, deadline));
      for (size_t t = 0; t < tensors && mismatches[worker].empty(); ++t) {
        const auto p = client.parameters(t);
        for (size_t i = 0; i < p.size(); ++i) {
          float sum = 0.0f;
          for (int w = 0; w < spec.workers; ++w) sum += gradient(w, clock, i + t);
          if (std::memcmp(&sum, &p[i], sizeof(float)) != 0) {
            mismatches[worker] =
                fmt::format("clock {} tensor {} element {}: {} != rank-order sum {}", clock, t, i, p[i], sum);
            break;
          }
        }
      }
    }
    return client.finish(deadline);
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < spec.workers; ++w) {
    ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
    EXPECT_EQ(mismatches[w], "") << "worker " << w;
  }
}

TEST(PsFeatures, SumServersRefuseAnythingButBsp) {
  ClusterSpec spec;
  spec.server.optimizer = parse("sum");
  spec.server.consistency = ps::Consistency::async(1, 1);
  spec.deadline = std::chrono::seconds(2);
  const ClusterRun run = runCluster(spec);
  EXPECT_NE(run.server_status[0].message().find("optimizer sum needs BSP"), std::string::npos)
      << run.server_status[0].toString();
}

}  // namespace
}  // namespace poseidon::testing
