// MG-WFBP through the Session: merged layers travel as one message yet the trainer still sees
// its own layers (one wait, one timeline record per layer, the unit's bytes shared out exactly),
// a plan the model cannot take fails start() naming why, and so does a worker given other merge
// options; under SSP merged layers still start from worker 0's parameters. Bit-identity of merged training
// is equivalence_test.cc's (ps_merged, ring_merged).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "tests/trainer/api/session_job.h"
#include "tests/trainer/api/tiny_cnn.h"
#include "trainer/api/session.h"
#include "trainer/reference/network_session.h"
#include "trainer/wfbp/merge_options.h"
#include "trainer/wfbp/merge_plan_text.h"

namespace poseidon::testing {
namespace {

constexpr int kWorkers = 2;
constexpr size_t kBatch = 4;
constexpr uint64_t kSteps = 6;

trainer::SessionOptions mergedJob(const char* merge) {
  trainer::SessionOptions options;
  options.job = "merge-test";
  options.layout = {kWorkers, 1, 0};
  options.batch = kBatch;
  options.optimizer = kernels::parseOptimizer("sgd:lr=0.05").value();
  options.hybcomm.mode = trainer::HybCommMode::kFixed;
  options.hybcomm.fixed = scheme::Scheme::kPs;
  options.merge = trainer::parseMergeMode(merge).value();
  options.startup_timeout = std::chrono::seconds(20);
  options.sync_timeout = std::chrono::seconds(20);
  return options;
}

struct Recorded {
  std::mutex mutex;
  std::vector<trainer::SyncRecord> records;  // worker 0's
};

TEST(SessionMerge, MergedLayersSyncAsOneMessageAndAreReportedPerLayer) {
  Recorded recorded;
  std::vector<std::vector<float>> conv2_params(kWorkers);
  size_t units = 0;
  std::string groups;
  const auto per_rank = [&](int rank, trainer::SessionOptions& options) {
    if (rank != 0) return;
    options.on_sync = [&](const trainer::SyncRecord& record) {
      std::lock_guard lock(recorded.mutex);
      recorded.records.push_back(record);
    };
  };
  const std::vector<Status> statuses = runSessionJob(
      mergedJob("fixed:0,1,2-3"),
      [&](trainer::Session& session, int w) -> Status {
        auto network = tinyCnnTwoConvs(kBatch, 100 + static_cast<uint64_t>(w));
        if (!network) return network.status();
        POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
        POSEIDON_RETURN_IF_ERROR(session.start());
        if (w == 0) {
          units = session.syncUnits().unitCount();
          groups = session.mergePlan() ? trainer::formatMergeGroups(session.mergePlan()->groups) : "none";
        }
        network->setHooks(trainer::reference::sessionHooks(session));
        auto reader = tools::BatchReader::create(fashionTrainSet(), {1, kWorkers, static_cast<uint32_t>(w), kBatch});
        if (!reader) return reader.status();
        trainer::data::Position position;
        for (uint64_t s = 0; s < kSteps; ++s) POSEIDON_RETURN_IF_ERROR(trainStep(*network, session, *reader, position));
        POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
        conv2_params[static_cast<size_t>(w)].assign(network->params(1).begin(), network->params(1).end());
        return session.finish();
      },
      per_rank);
  ASSERT_EQ(failures(statuses), "");
  EXPECT_EQ(units, 3u);  // conv1..conv2, fc1, fc2
  EXPECT_EQ(groups, "0,1,2-3");
  // The merged unit's update reached both layers' buffers on every worker alike.
  EXPECT_EQ(conv2_params[0], conv2_params[1]);

  // One record per layer and iteration; conv1 and conv2 share one message (the same start and
  // completion), and their bytes add up to a sync of both.
  std::map<uint64_t, std::map<size_t, trainer::SyncRecord>> by_iteration;
  for (const trainer::SyncRecord& r : recorded.records) {
    EXPECT_TRUE(by_iteration[r.iteration].emplace(r.layer, r).second) << "layer " << r.layer << " twice";
  }
  ASSERT_EQ(by_iteration.size(), kSteps);
  for (const auto& [iteration, layers] : by_iteration) {
    ASSERT_EQ(layers.size(), 4u) << "iteration " << iteration;
    const trainer::SyncRecord &conv1 = layers.at(0), &conv2 = layers.at(1), &fc1 = layers.at(2);
    EXPECT_EQ(conv1.started, conv2.started) << "iteration " << iteration;
    EXPECT_EQ(conv1.completed, conv2.completed) << "iteration " << iteration;
    EXPECT_NE(conv1.started, fc1.started) << "iteration " << iteration;
    // conv1 has 208 floats, conv2 1608: the shares follow the sizes.
    EXPECT_GT(conv1.bytes_sent, 0u);
    EXPECT_GT(conv2.bytes_sent, conv1.bytes_sent * 7);
    // conv2 reports its gradient first (backward order); the message waits for conv1's.
    EXPECT_LE(conv2.reported, conv1.reported);
    EXPECT_GE(conv1.started, conv1.reported);
  }
}

// Under SSP the servers hand every worker its initial model; a merged unit's arrives in the sync's
// own memory and must reach the member layers, so workers seeded otherwise start from worker 0's.
TEST(SessionMerge, UnderSspMergedLayersStartFromWorkerZerosParameters) {
  trainer::SessionOptions options = mergedJob("fixed:0,1,2-3");
  options.consistency = ps::Consistency::ssp(0);
  std::vector<std::vector<float>> conv1(kWorkers), conv2(kWorkers);
  const std::vector<Status> statuses = runSessionJob(options, [&](trainer::Session& session, int w) -> Status {
    auto network = tinyCnnTwoConvs(kBatch, 100 + static_cast<uint64_t>(w));  // other seeds
    if (!network) return network.status();
    POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
    POSEIDON_RETURN_IF_ERROR(session.start());
    conv1[static_cast<size_t>(w)].assign(network->params(0).begin(), network->params(0).end());
    conv2[static_cast<size_t>(w)].assign(network->params(1).begin(), network->params(1).end());
    return session.finish();
  });
  ASSERT_EQ(failures(statuses), "");
  auto seed100 = tinyCnnTwoConvs(kBatch, 100);
  ASSERT_TRUE(seed100.isOk());
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_TRUE(std::equal(conv1[w].begin(), conv1[w].end(), seed100->params(0).begin())) << "worker " << w;
    EXPECT_TRUE(std::equal(conv2[w].begin(), conv2[w].end(), seed100->params(1).begin())) << "worker " << w;
  }
}

// Merge options must be the same on every worker: one started otherwise fails at once naming both.
TEST(SessionMerge, AWorkerGivenOtherMergeOptionsFailsNamingBoth) {
  trainer::SessionOptions options = mergedJob("fixed:0,1,2-3");
  options.startup_timeout = std::chrono::seconds(3);  // worker 0 and the server then wait for worker 1
  const auto began = std::chrono::steady_clock::now();
  const std::vector<Status> statuses = runSessionJob(
      options,
      [&](trainer::Session& session, int w) {
        auto network = tinyCnnTwoConvs(kBatch, 100 + static_cast<uint64_t>(w));
        if (!network) return network.status();
        POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
        return session.start();
      },
      [](int rank, trainer::SessionOptions& mine) {
        if (rank == 1) mine.merge = trainer::parseMergeMode("planned").value();
      });
  const std::string worker1 = statuses[1].toString();
  EXPECT_NE(worker1.find("worker 0 merges 'fixed:0,1,2-3', this worker 'planned (probed)'"), std::string::npos)
      << worker1;
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(15));
}

TEST(SessionMerge, APlanTheModelCannotTakeFailsStartNamingWhy) {
  for (const auto& [merge, expected] :
       std::vector<std::pair<const char*, const char*>>{{"fixed:0,1-3", "fully-connected layer 'fc1'"},
                                                        {"fixed:0,1,2-4", "past the last of the 4 layers"},
                                                        {"planned", "backward times given"}}) {
    trainer::SessionOptions options = mergedJob(merge);
    options.startup_timeout = std::chrono::seconds(2);  // the server's wait for the model
    const std::vector<Status> statuses = runSessionJob(options, [&](trainer::Session& session, int w) {
      auto network = tinyCnnTwoConvs(kBatch, 100 + static_cast<uint64_t>(w));
      if (!network) return network.status();
      POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
      return session.start();
    });
    // The workers fail at start(); the server then fails waiting for them (a deadline, or the
    // store): what matters is each worker's own message.
    for (int w = 0; w < kWorkers; ++w) {
      const Status& status = statuses[static_cast<size_t>(w)];
      EXPECT_FALSE(status.isOk()) << merge;
      EXPECT_NE(status.toString().find(expected), std::string::npos) << merge << ": " << status.toString();
    }
  }
}

}  // namespace
}  // namespace poseidon::testing
