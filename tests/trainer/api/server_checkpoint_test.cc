// Restart under SSP and async through the Session (trainer/api/server_checkpoint_options.h): the
// PS servers checkpoint the weights and the optimizer state every so many clocks, each worker
// saves its trainer's state beside them, and a resumed job goes on from the newest clock every
// server and every worker has.
//
// The gradients are small multiples of 1/8 that do not depend on the parameters, and lr and 1/P
// are powers of two, so every sum is exact whatever order the servers apply pushes in: the
// servers' state at clock n is the one process's after n iterations, bit for bit. A run that
// "crashes" after the servers wrote clock 6 but before worker 1 wrote its file of 6, resumed, must
// go on from clock 3 and end with exactly the one process's parameters: resuming from 6 (a clock
// with no file of worker 1's), from the servers' fresh model, or with an update lost or applied
// twice would each change the floats. Checkpoints every 3 clocks with keep 2: at most one earlier
// snapshot waits for the disk or for the other servers when the next falls due, so no server
// skips one (ps/checkpoint/checkpointer.h) however slow the machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "tests/support/mesh.h"
#include "tests/support/timeouts.h"
#include "tests/trainer/api/session_job.h"
#include "trainer/api/worker_checkpoint.h"

namespace poseidon::testing {
namespace {

using trainer::LayerRegistration;

constexpr int kWorkers = 2;
constexpr size_t kFirst = 6, kSecond = 3;  // two layers of this many floats
constexpr float kLr = 0.25f;

trainer::SessionOptions sspJob(const std::string& dir, uint64_t every, bool resume,
                               const ps::Consistency& consistency = ps::Consistency::ssp(0)) {
  trainer::SessionOptions options = psSessionOptions("server-checkpoint-test", kWorkers, consistency);
  options.server_checkpoints = {dir, every, 2, resume};
  return options;
}

// Worker w's gradient of iteration i: both layers back to back.
std::vector<float> gradientOf(int w, uint64_t i) {
  std::vector<float> g(kFirst + kSecond);
  for (size_t j = 0; j < g.size(); ++j) g[j] = static_cast<float>((j + 3 * static_cast<size_t>(w) + i) % 5) * 0.125f;
  return g;
}

// The one process's parameters after `iterations`: SGD on the mean of the workers' gradients.
std::vector<float> reference(uint64_t iterations) {
  std::vector<float> params(kFirst + kSecond, 1.0f);
  for (uint64_t i = 0; i < iterations; ++i) {
    for (int w = 0; w < kWorkers; ++w) {
      const std::vector<float> g = gradientOf(w, i);
      for (size_t j = 0; j < params.size(); ++j) params[j] -= kLr * (g[j] / kWorkers);
    }
  }
  return params;
}

struct Worker {
  std::vector<float> first = std::vector<float>(kFirst), second = std::vector<float>(kSecond);
  std::vector<float> first_grad = std::vector<float>(kFirst), second_grad = std::vector<float>(kSecond);

  explicit Worker(float initial) {
    std::fill(first.begin(), first.end(), initial);
    std::fill(second.begin(), second.end(), initial);
  }
  Status add(trainer::Session& session) {
    LayerRegistration layer;
    layer.name = "first";
    layer.params = first;
    layer.gradient = first_grad;
    POSEIDON_RETURN_IF_ERROR(session.addLayer(layer).status());
    layer.name = "second";
    layer.params = second;
    layer.gradient = second_grad;
    return session.addLayer(layer).status();
  }
  // One iteration: wait for both layers (forward), fill and report (backward).
  Status iterate(trainer::Session& session, int w) {
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
    const std::vector<float> g = gradientOf(w, session.iteration());
    std::copy(g.begin(), g.begin() + kFirst, first_grad.begin());
    std::copy(g.begin() + kFirst, g.end(), second_grad.begin());
    POSEIDON_RETURN_IF_ERROR(session.gradientReady(1));
    POSEIDON_RETURN_IF_ERROR(session.gradientReady(0));
    return session.endIteration();
  }
  std::vector<float> all() const {
    std::vector<float> both = first;
    both.insert(both.end(), second.begin(), second.end());
    return both;
  }
};

std::vector<uint8_t> extraOf(int w, uint64_t iteration) {
  const std::string text = fmt::format("worker {} after iteration {}", w, iteration);
  return {text.begin(), text.end()};
}

bool sameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

TEST(SessionServerCheckpoints, AResumedJobGoesOnFromTheNewestClockEveryRankHasAndEndsAsOneProcess) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  constexpr uint64_t kEvery = 3, kCrashAt = 6, kEnd = 9;
  // The first run: checkpoints at 3 and 6, but worker 1 "crashes" before its file of 6.
  auto statuses = runSessionJob(sspJob(checkpoints, kEvery, false), [&](trainer::Session& session, int w) -> Status {
    Worker worker(w == 0 ? 1.0f : 7.0f);  // worker 0's parameters become the servers'
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    while (session.iteration() < kCrashAt) {
      POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
      const uint64_t i = session.iteration();
      if (i % kEvery == 0 && !(w == 1 && i == kCrashAt)) {
        POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, i)));
      }
    }
    return session.finish();
  });
  ASSERT_EQ(failures(statuses), "");
  for (int s = 0; s < 2; ++s) {
    EXPECT_TRUE(std::filesystem::exists(fmt::format("{}/server-{}.clock-{}.ckpt", checkpoints, s, kCrashAt)))
        << "server " << s << " wrote no checkpoint of clock " << kCrashAt << ": the test would not test";
  }
  ASSERT_TRUE(std::filesystem::exists(fmt::format("{}/worker-0-{}.ckpt", checkpoints, kCrashAt)));

  // Resumed: clock 3, each worker's own state of 3, then on to the end.
  std::vector<std::vector<float>> ends(kWorkers);
  statuses = runSessionJob(sspJob(checkpoints, kEvery, true), [&](trainer::Session& session, int w) -> Status {
    Worker worker(-3.0f);  // overwritten by the servers' clock 3
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    EXPECT_EQ(session.iteration(), 3u) << "worker " << w;
    auto extra = session.restoreCheckpoint(checkpoints + "/");  // the same directory, spelt otherwise
    if (!extra) return extra.status();
    EXPECT_EQ(*extra, extraOf(w, 3)) << "worker " << w;
    // The crashed run's file of 6 went: a later resume must not pair it with this run's.
    EXPECT_FALSE(std::filesystem::exists(fmt::format("{}/worker-{}-{}.ckpt", checkpoints, w, kCrashAt)));
    while (session.iteration() < kEnd) {
      POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
      if (session.iteration() % kEvery == 0) {
        POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints + "/", extraOf(w, session.iteration())));
      }
    }
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
    ends[static_cast<size_t>(w)] = worker.all();
    return session.finish();
  });
  ASSERT_EQ(failures(statuses), "");
  const std::vector<float> expected = reference(kEnd);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(sameBits(ends[static_cast<size_t>(w)], expected))
        << "worker " << w << " ends with " << fmt::format("{}", fmt::join(ends[static_cast<size_t>(w)], " "))
        << ", one process with " << fmt::format("{}", fmt::join(expected, " "));
  }
  // The reference moved from where a resume from the fresh model or clock 6 would have gone.
  EXPECT_FALSE(sameBits(expected, reference(kEnd - 3)));
  EXPECT_FALSE(sameBits(expected, reference(kEnd + 3)));
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(std::filesystem::exists(fmt::format("{}/worker-{}-{}.ckpt", checkpoints, w, kEnd))) << "worker " << w;
  }
}

// Under SSP(2) a server's checkpoint of clock 6 is taken when the slow worker reaches 6, and holds
// the fast worker's updates of clocks 6 and 7 too (it runs up to 2 ahead). Resumed at 6, the fast
// worker pushes those clocks again: the servers count them but do not apply them twice, so every
// worker's update counts once and the job still ends exactly where one process does (read by a
// third run, resumed from the servers' clock 12, at which both workers stopped).
TEST(SessionServerCheckpoints, AResumedSspJobCountsAFastWorkersUpdatesOnce) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  const ps::Consistency ssp = ps::Consistency::ssp(2);
  constexpr uint64_t kEvery = 3, kEnd = 12;
  std::vector<std::vector<float>> ends(kWorkers);
  for (const uint64_t stop : {uint64_t{8}, kEnd, kEnd}) {
    const bool resume = stop != 8;
    const auto statuses =
        runSessionJob(sspJob(checkpoints, kEvery, resume, ssp), [&](trainer::Session& session, int w) -> Status {
          Worker worker(w == 0 ? 1.0f : 7.0f);
          POSEIDON_RETURN_IF_ERROR(worker.add(session));
          POSEIDON_RETURN_IF_ERROR(session.start());
          if (resume) POSEIDON_RETURN_IF_ERROR(session.restoreCheckpoint(checkpoints).status());
          if (session.iteration() == kEnd) {  // the third run: the servers' state at the end
            ends[static_cast<size_t>(w)] = worker.all();
            return session.finish();
          }
          while (session.iteration() < stop) {
            if (w == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // so worker 0 runs ahead
            POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
            if (session.iteration() % kEvery == 0) {
              POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, session.iteration())));
            }
          }
          return session.finish();
        });
    ASSERT_EQ(failures(statuses), "") << "the run to " << stop;
  }
  const std::vector<float> expected = reference(kEnd);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(sameBits(ends[static_cast<size_t>(w)], expected))
        << "worker " << w << " reads " << fmt::format("{}", fmt::join(ends[static_cast<size_t>(w)], " "))
        << ", one process has " << fmt::format("{}", fmt::join(expected, " "));
  }
}

// A checkpoint taken after a resume, while a worker's replays are still to come, holds their
// updates: it must count them, or a second resume applies them again. Checkpoints every clock:
// 1. worker 0 runs to 9, worker 1 (slow) to 7: the servers' clock 7 holds worker 0's clocks 7, 8;
// 2. resumed at 7, worker 0 now slow: worker 1's push of 7, then worker 0's replay of 7, make
//    clock 8, whose checkpoint holds worker 0's update of 8 (a replay still to come); both stop;
// 3. resumed at 8, to 12: worker 0's push of 8 must not be applied again;
// 4. resumed at 12: every worker's update once, so exactly one process's parameters.
TEST(SessionServerCheckpoints, AResumeOfAResumedSspJobStillCountsEachUpdateOnce) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  constexpr uint64_t kEnd = 12;
  struct Run {
    std::array<uint64_t, kWorkers> stop;
    int slow;  // the worker that sleeps before each iteration
  };
  std::vector<std::vector<float>> ends(kWorkers);
  const std::array<Run, 4> runs = {Run{{9, 7}, 1}, Run{{8, 8}, 0}, Run{{kEnd, kEnd}, 1}, Run{{kEnd, kEnd}, 1}};
  for (size_t r = 0; r < runs.size(); ++r) {
    // A checkpoint every clock for the first two runs; then only 12, which no server can skip (the
    // disk is behind only with two before it), so the last run reads the end.
    const uint64_t every = r < 2 ? 1 : 4;
    trainer::SessionOptions options = sspJob(checkpoints, every, r > 0, ps::Consistency::ssp(2));
    options.server_checkpoints.keep = 8;  // room for settlements that lag
    const auto statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
      Worker worker(w == 0 ? 1.0f : 7.0f);
      POSEIDON_RETURN_IF_ERROR(worker.add(session));
      POSEIDON_RETURN_IF_ERROR(session.start());
      if (r > 0) POSEIDON_RETURN_IF_ERROR(session.restoreCheckpoint(checkpoints).status());
      if (r + 1 == runs.size()) {
        EXPECT_EQ(session.iteration(), kEnd) << "worker " << w;
        ends[static_cast<size_t>(w)] = worker.all();
        return session.finish();
      }
      while (session.iteration() < runs[r].stop[static_cast<size_t>(w)]) {
        // Slow enough that a server seldom skips a checkpoint for a disk behind.
        std::this_thread::sleep_for(std::chrono::milliseconds(w == runs[r].slow ? 40 : 10));
        POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
        if (session.iteration() % every == 0) {
          POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, session.iteration())));
        }
      }
      return session.finish();
    });
    ASSERT_EQ(failures(statuses), "") << "run " << r + 1;
  }
  const std::vector<float> expected = reference(kEnd);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(sameBits(ends[static_cast<size_t>(w)], expected))
        << "worker " << w << " reads " << fmt::format("{}", fmt::join(ends[static_cast<size_t>(w)], " "))
        << ", one process has " << fmt::format("{}", fmt::join(expected, " "));
  }
}

// Async (Downpour with n_push 1) resumes the same way: the iteration and each worker's state.
TEST(SessionServerCheckpoints, AnAsyncJobResumesWhereEveryRankHasACheckpoint) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  const ps::Consistency async = ps::Consistency::async(1, 2);
  for (const bool resume : {false, true}) {
    const auto statuses =
        runSessionJob(sspJob(checkpoints, 4, resume, async), [&](trainer::Session& session, int w) -> Status {
          Worker worker(1.0f);
          POSEIDON_RETURN_IF_ERROR(worker.add(session));
          POSEIDON_RETURN_IF_ERROR(session.start());
          if (resume) {
            EXPECT_EQ(session.iteration(), 8u) << "worker " << w;
            auto extra = session.restoreCheckpoint(checkpoints);
            if (!extra) return extra.status();
            EXPECT_EQ(*extra, extraOf(w, 8)) << "worker " << w;
          }
          const uint64_t end = session.iteration() + 8;
          while (session.iteration() < end) {
            POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
            if (session.iteration() % 4 == 0) {
              POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, session.iteration())));
            }
          }
          return session.finish();
        });
    ASSERT_EQ(failures(statuses), "") << (resume ? "resumed" : "first") << " run";
  }
}

// The newest clock of server 0's checkpoint files in `dir` (0: none).
uint64_t newestServerClock(const std::string& dir) {
  uint64_t newest = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view kPrefix = "server-0.clock-";
    if (!name.starts_with(kPrefix) || !name.ends_with(".ckpt")) continue;
    newest = std::max<uint64_t>(newest, std::stoull(name.substr(kPrefix.size())));
  }
  return newest;
}

// Async goes on without a lost worker, and a chunk's version can then jump several clocks at
// once. Worker 1 dies having pushed iteration 3 of one layer only: the server's chunk of that
// layer reaches clock 4 with worker 0, the other waits at 3 until worker 1 is left out, then
// jumps past 4. The checkpoint of 4 (begun by the first chunk) has no state of its own and is
// skipped; before, it waited for the jumped chunk for good, and with keep 1 that one undecided
// snapshot made the server skip every later checkpoint. Worker 0 trains until a checkpoint of
// clock 10 or later is written (the server must notice the loss while worker 0 is still there:
// with every worker gone no version moves).
TEST(SessionServerCheckpoints, AnAsyncServerGoesOnCheckpointingWhenALostWorkerMakesAChunkJump) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  trainer::SessionOptions options = sspJob(checkpoints, 2, false, ps::Consistency::async(1, 1));
  options.layout = {kWorkers, 1, 0};  // both layers' chunks on one server: one snapshot of both
  options.server_checkpoints.keep = 1;
  const auto give_up = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(30));
  const auto statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
    Worker worker(1.0f);
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    if (w == 1) {
      for (int i = 0; i < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(40));  // so worker 0 runs ahead
        POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
      }
      // Iteration 3: the second layer reported and applied, then lost (no finish()).
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
      POSEIDON_RETURN_IF_ERROR(session.gradientReady(1));
      POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
      return makeStatus(StatusCode::kUnavailable, "worker 1 lost on purpose");
    }
    while (newestServerClock(checkpoints) < 10 && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
    }
    // The server arrives at the exit for the lost worker (trainer/api/job_exit.h).
    return session.finish();
  });
  EXPECT_TRUE(statuses[0].isOk()) << statuses[0].toString();
  EXPECT_TRUE(statuses[kWorkers].isOk()) << statuses[kWorkers].toString();
  EXPECT_EQ(statuses[1].code(), StatusCode::kUnavailable) << statuses[1].toString();
  EXPECT_GE(newestServerClock(checkpoints), 10u) << "the server stopped checkpointing after the loss";
}

// A worker that cannot read its checkpoint directory on resume still takes part in the agreement
// (holding none), so every rank fails at once rather than wait for it, and it names the cause.
TEST(SessionServerCheckpoints, AWorkerThatCannotReadItsDirectoryFailsTheResumeNamingTheCause) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  auto statuses = runSessionJob(sspJob(checkpoints, 3, false), [&](trainer::Session& session, int w) -> Status {
    Worker worker(1.0f);
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    for (int i = 0; i < 3; ++i) POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
    POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, 3)));
    return session.finish();
  });
  ASSERT_EQ(failures(statuses), "");
  // Worker 1's "directory" is a file: reading it fails (as root, a permission would not).
  const std::string not_a_directory = dir.path() + "/a-file";
  { std::ofstream(not_a_directory) << "x"; }
  statuses = runSessionJob(
      sspJob(checkpoints, 3, true),
      [&](trainer::Session& session, int) -> Status {
        Worker worker(1.0f);
        POSEIDON_RETURN_IF_ERROR(worker.add(session));
        POSEIDON_RETURN_IF_ERROR(session.start());
        return session.finish();
      },
      [&](int rank, trainer::SessionOptions& mine) {
        if (rank == 1) mine.server_checkpoints.dir = not_a_directory;
      });
  for (size_t rank = 0; rank < statuses.size(); ++rank) {
    EXPECT_FALSE(statuses[rank].isOk()) << "rank " << rank;
    EXPECT_NE(statuses[rank].message().find("worker 1 from none"), std::string::npos) << statuses[rank].toString();
  }
  EXPECT_NE(statuses[1].message().find(
                fmt::format("this worker held none: cannot read the checkpoint directory '{}'", not_a_directory)),
            std::string::npos)
      << statuses[1].toString();
}

// Files at or below the floor (the clock every server has written) go but the newest `keep`.
TEST(SessionServerCheckpoints, AWorkerKeepsItsNewestFilesUpToTheServersCommittedClock) {
  EXPECT_EQ(trainer::checkpointsToRemove({9, 3, 12, 6, 15}, 12, 2), (std::vector<uint64_t>{3, 6}));
  EXPECT_EQ(trainer::checkpointsToRemove({3, 6, 9}, 6, 2), (std::vector<uint64_t>{}));
  EXPECT_EQ(trainer::checkpointsToRemove({3, 6, 9}, 9, 1), (std::vector<uint64_t>{3, 6}));
  EXPECT_EQ(trainer::checkpointsToRemove({}, 9, 2), (std::vector<uint64_t>{}));
  // Nothing at or below the floor: nothing goes.
  EXPECT_EQ(trainer::checkpointsToRemove({10, 20}, 5, 1), (std::vector<uint64_t>{}));
}

// Worker 0 tells the servers how to checkpoint; one without a directory of its own fails naming it.
TEST(SessionServerCheckpoints, AServerWithoutADirectoryFailsNamingWhatWorkerZeroAsked) {
  TempDir dir;
  trainer::SessionOptions options = sspJob(dir.path() + "/ckpt", 3, false);
  // The workers wait for a server that never comes; the server's own wait (for worker 0's set-up)
  // has the same deadline, so it is scaled for slow builds.
  options.startup_timeout = scaled(std::chrono::seconds(3));
  const auto statuses = runSessionJob(
      options,
      [&](trainer::Session& session, int) -> Status {
        Worker worker(1.0f);
        POSEIDON_RETURN_IF_ERROR(worker.add(session));
        return session.start();
      },
      [](int rank, trainer::SessionOptions& mine) {
        if (rank == kWorkers) mine.server_checkpoints = {};
      });
  const Status& server = statuses[static_cast<size_t>(kWorkers)];
  EXPECT_NE(server.message().find("worker 0 asks the servers to checkpoint every 3 clocks, but this server's "
                                  "SessionOptions::server_checkpoints.dir is empty"),
            std::string::npos)
      << server.toString();
}

TEST(SessionServerCheckpoints, ResumingWhereNoServerHasACheckpointStartsAtZeroAndRestoreSaysSo) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  const auto statuses = runSessionJob(sspJob(checkpoints, 3, true), [&](trainer::Session& session, int w) -> Status {
    Worker worker(1.0f);
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    EXPECT_EQ(session.iteration(), 0u);
    const Status restore = session.restoreCheckpoint(checkpoints).status();
    EXPECT_EQ(restore.code(), StatusCode::kInvalidArgument) << restore.toString();
    EXPECT_NE(restore.message().find(fmt::format("no server had a checkpoint in '{}'", checkpoints)), std::string::npos)
        << restore.toString();
    POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "");
}

TEST(SessionServerCheckpoints, SavesOffTheServersClocksOrDirectoryAreRefusedNamingBoth) {
  TempDir dir;
  const std::string checkpoints = dir.path() + "/ckpt";
  const auto statuses = runSessionJob(sspJob(checkpoints, 3, false), [&](trainer::Session& session, int w) -> Status {
    Worker worker(1.0f);
    POSEIDON_RETURN_IF_ERROR(worker.add(session));
    POSEIDON_RETURN_IF_ERROR(session.start());
    POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
    const std::string off_clock = session.saveCheckpoint(checkpoints, {}).toString();
    EXPECT_NE(off_clock.find("saveCheckpoint after iteration 1 under consistency ssp:0: the servers checkpoint "
                             "every 3 clocks (SessionOptions::server_checkpoints.every), so save after "
                             "iterations 3, 6, ..."),
              std::string::npos)
        << off_clock;
    for (int i = 1; i < 3; ++i) POSEIDON_RETURN_IF_ERROR(worker.iterate(session, w));
    const std::string elsewhere = session.saveCheckpoint(dir.path() + "/other", {}).toString();
    EXPECT_NE(elsewhere.find(fmt::format("into SessionOptions::server_checkpoints.dir '{}'", checkpoints)),
              std::string::npos)
        << elsewhere;
    POSEIDON_RETURN_IF_ERROR(session.saveCheckpoint(checkpoints, extraOf(w, 3)));
    const std::string restore = session.restoreCheckpoint(checkpoints).status().toString();
    EXPECT_NE(restore.find("after training began"), std::string::npos) << restore;
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "");
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/worker-1-3.ckpt"));
}

TEST(SessionServerCheckpoints, OptionsThatCannotWorkAreClearErrorsAtJoin) {
  trainer::SessionOptions bsp = sspJob("/tmp/ckpt", 3, false);
  bsp.consistency = ps::Consistency::bsp();
  EXPECT_NE(joinError(bsp).find("server_checkpoints.dir '/tmp/ckpt' under consistency bsp"), std::string::npos)
      << joinError(bsp);
  EXPECT_NE(joinError(sspJob("/tmp/ckpt", 0, false)).find("server_checkpoints.every is 0 and resume is off"),
            std::string::npos);
  trainer::SessionOptions keep = sspJob("/tmp/ckpt", 3, false);
  keep.server_checkpoints.keep = 0;
  EXPECT_NE(joinError(keep).find("server_checkpoints.keep is 0; expected 1 to 1000"), std::string::npos)
      << joinError(keep);
  EXPECT_NE(joinError(sspJob("", 0, true)).find("server_checkpoints has resume but no dir"), std::string::npos)
      << joinError(sspJob("", 0, true));
  EXPECT_NE(joinError(sspJob("", 5, false)).find("server_checkpoints has every 5 but no dir"), std::string::npos);
  const std::string n_push = joinError(sspJob("/tmp/ckpt", 4, false, ps::Consistency::async(2, 1)));
  EXPECT_NE(n_push.find("server_checkpoints under consistency async:push=2,fetch=1: checkpoints need n_push 1"),
            std::string::npos)
      << n_push;
}

}  // namespace
}  // namespace poseidon::testing
