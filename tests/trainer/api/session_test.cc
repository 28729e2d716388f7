// The embedding API's contract: bad input from the trainer is a clear error naming the layer and
// what was expected, never a hang; and wait-free backprop really overlaps: in the recorded
// timeline, syncs of upper layers run during the backward pass of lower ones.
#include "trainer/api/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "tests/trainer/api/session_job.h"
#include "tools/train/batch_reader.h"
#include "trainer/data/fashion_mnist.h"
#include "trainer/reference/fashion_cnn.h"
#include "trainer/reference/network_session.h"
#include "trainer/timeline/overlap.h"
#include "trainer/timeline/recorder.h"

namespace poseidon::testing {
namespace {

using trainer::LayerRegistration;

trainer::SessionOptions smallJob(int workers) {
  trainer::SessionOptions options;
  options.job = "session-test";
  options.layout = {workers, 1, 0};
  options.batch = 2;
  options.optimizer = kernels::parseOptimizer("sgd:lr=0.1").value();
  options.startup_timeout = std::chrono::seconds(20);
  options.sync_timeout = std::chrono::seconds(20);
  return options;
}

// Buffers of one FC layer (3 outputs, 4 inputs, bias) and one other layer of 5 floats, K = 2.
struct Buffers {
  std::vector<float> fc_params = std::vector<float>(3 * 4 + 3, 0.5f);
  std::vector<float> x = std::vector<float>(2 * 4, 1.0f), dy = std::vector<float>(2 * 3, 0.25f);
  std::vector<float> other_params = std::vector<float>(5, 1.0f), other_grad = std::vector<float>(5, 1.0f);

  LayerRegistration fc() {
    LayerRegistration r;
    r.name = "fc";
    r.kind = model::LayerKind::kFullyConnected;
    r.fc = {3, 4, true};
    r.params = fc_params;
    r.input = x;
    r.output_gradient = dy;
    return r;
  }
  LayerRegistration other() {
    LayerRegistration r;
    r.name = "scale";
    r.params = other_params;
    r.gradient = other_grad;
    return r;
  }
};

std::string messageOf(const Status& status) { return status.isOk() ? "OK" : status.toString(); }

TEST(Session, BadInputIsAClearErrorNeverAHang) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<Status> statuses = runSessionJob(smallJob(1), [](trainer::Session& session, int) -> Status {
    Buffers b;
    EXPECT_NE(messageOf(session.waitForParameters(0)).find("before start()"), std::string::npos);
    EXPECT_NE(messageOf(session.gradientReady(0)).find("before start()"), std::string::npos);
    // Buffers that do not fit the shape and K.
    LayerRegistration short_dy = b.fc();
    short_dy.output_gradient = std::span<const float>(b.dy).first(5);
    EXPECT_NE(
        messageOf(session.addLayer(short_dy).status()).find("output_gradient has 5 floats, expected K x M = 2 x 3"),
        std::string::npos);
    LayerRegistration wrong_params = b.other();
    wrong_params.gradient = std::span<const float>(b.other_grad).first(4);
    EXPECT_NE(messageOf(session.addLayer(wrong_params).status()).find("gradient has 4 floats"), std::string::npos);
    LayerRegistration fc_with_gradient = b.fc();
    fc_with_gradient.gradient = b.other_grad;
    EXPECT_NE(messageOf(session.addLayer(fc_with_gradient).status()).find("give no gradient buffer"),
              std::string::npos);
    // Registered twice.
    EXPECT_TRUE(session.addLayer(b.fc()).isOk());
    EXPECT_NE(messageOf(session.addLayer(b.fc()).status()).find("layer 'fc' is registered twice"), std::string::npos);
    EXPECT_TRUE(session.addLayer(b.other()).isOk());
    POSEIDON_RETURN_IF_ERROR(session.start());
    EXPECT_NE(messageOf(session.addLayer(b.other()).status()).find("after start()"), std::string::npos);
    // A gradient for an unknown layer; the same layer twice in one iteration.
    EXPECT_NE(messageOf(session.gradientReady(7)).find("layer 7: there are 2 layers"), std::string::npos);
    POSEIDON_RETURN_IF_ERROR(session.gradientReady(1));
    EXPECT_NE(messageOf(session.gradientReady(1)).find("'scale' reported its gradient twice in iteration 0"),
              std::string::npos);
    // An iteration that misses a layer.
    EXPECT_NE(messageOf(session.endIteration()).find("not reported: 'fc'"), std::string::npos);
    POSEIDON_RETURN_IF_ERROR(session.gradientReady(0));
    POSEIDON_RETURN_IF_ERROR(session.endIteration());
    // A report before the last sync was waited for.
    EXPECT_NE(messageOf(session.gradientReady(0)).find("before waiting for the parameters"), std::string::npos);
    EXPECT_NE(messageOf(session.waitForParameters(9)).find("layer 9"), std::string::npos);
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(0));  // nothing outstanding: at once
    POSEIDON_RETURN_IF_ERROR(session.waitForParameters(1));
    // The step happened: 0.5 - 0.1 * (sum over K of dy * x) = 0.5 - 0.1 * 0.5 for the weight.
    EXPECT_FLOAT_EQ(b.fc_params[0], 0.45f);
    EXPECT_FLOAT_EQ(b.fc_params[12], 0.45f);  // the bias: 0.5 - 0.1 * (0.25 + 0.25)
    EXPECT_FLOAT_EQ(b.other_params[0], 0.9f);
    return session.finish();
  });
  EXPECT_EQ(failures(statuses), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15)) << "something waited for a deadline";
}

TEST(Session, WorkersThatRegisterDifferentLayersFailNamingTheDifference) {
  trainer::SessionOptions options = smallJob(2);
  // The server waits for workers that never connect: it ends by this deadline.
  options.startup_timeout = std::chrono::seconds(4);
  const std::vector<Status> statuses = runSessionJob(options, [](trainer::Session& session, int w) -> Status {
    Buffers b;
    LayerRegistration fc = b.fc();
    if (w == 1) fc.name = "fc_other";
    POSEIDON_RETURN_IF_ERROR(session.addLayer(fc).status());
    POSEIDON_RETURN_IF_ERROR(session.addLayer(b.other()).status());
    return session.start();
  });
  ASSERT_FALSE(statuses[1].isOk());
  EXPECT_NE(statuses[1].toString().find("fc_other"), std::string::npos) << statuses[1].toString();
}

TEST(Session, JoinRefusesALayoutThatDoesNotFitTheJob) {
  transport::bootstrap::LaunchInfo launch;
  launch.size = 5;
  launch.source = "test";
  auto session = trainer::Session::join(smallJob(2), launch);
  ASSERT_FALSE(session.isOk());
  EXPECT_NE(session.status().toString().find("the job has 5 ranks"), std::string::npos) << session.status().toString();
  trainer::SessionOptions zero = smallJob(1);
  zero.batch = 0;
  EXPECT_NE(trainer::Session::join(zero, launch).status().toString().find("batch K of 0"), std::string::npos);
}

// Two workers train the Fashion CNN (batch 16) for a few steps, recording each layer's backward
// interval (between its neighbours' gradient reports) and each sync (report to completion).
TEST(Session, SyncsOfUpperLayersOverlapTheBackwardPassOfLowerOnes) {
  auto set = trainer::data::loadFashionMnist(trainer::data::Split::kTrain);
  ASSERT_TRUE(set.isOk()) << set.status().toString();
  constexpr int kWorkers = 2;
  constexpr size_t kBatch = 16;
  std::vector<std::unique_ptr<trainer::timeline::Recorder>> recorders;
  for (int w = 0; w < kWorkers; ++w)
    recorders.push_back(std::make_unique<trainer::timeline::Recorder>(trainer::timeline::RecorderOptions{}));
  std::vector<std::string> names;
  const model::Model cnn = trainer::reference::fashionCnnModel(kBatch);
  for (const model::Layer& layer : cnn.layers()) names.push_back(layer.name());
  trainer::SessionOptions options = smallJob(kWorkers);
  options.batch = kBatch;
  const auto statuses = runSessionJob(
      options,
      [&](trainer::Session& session, int w) -> Status {
        trainer::timeline::Recorder& rec = *recorders[static_cast<size_t>(w)];
        auto compute = rec.addLane("compute");
        if (!compute) return compute.status();
        auto network = trainer::reference::buildFashionCnn(kBatch, 1);
        if (!network) return network.status();
        POSEIDON_RETURN_IF_ERROR(trainer::reference::registerNetwork(session, *network));
        POSEIDON_RETURN_IF_ERROR(session.start());
        int64_t last_report = 0;
        auto hooks = trainer::reference::sessionHooks(session);
        auto report = hooks.gradient_ready;
        hooks.gradient_ready = [&, report](size_t l) {
          const int64_t now = trainer::timeline::Recorder::nowNs();
          rec.record(*compute, rec.internName(names[l]), trainer::timeline::Category::kBackward, last_report, now);
          last_report = now;
          return report(l);
        };
        network->setHooks(hooks);
        auto reader = tools::BatchReader::create(*set, {3, kWorkers, static_cast<uint32_t>(w), kBatch});
        if (!reader) return reader.status();
        trainer::data::Position position;
        for (int s = 0; s < 8; ++s) {
          POSEIDON_RETURN_IF_ERROR(reader->read(position));
          auto loss = network->forward(reader->images(), reader->labels());
          if (!loss) return loss.status();
          last_report = trainer::timeline::Recorder::nowNs();
          POSEIDON_RETURN_IF_ERROR(network->backward());
          POSEIDON_RETURN_IF_ERROR(session.endIteration());
          position = reader->sharder().next(position);
        }
        return session.finish();
      },
      [&](int rank, trainer::SessionOptions& mine) {
        if (rank >= kWorkers) return;
        trainer::timeline::Recorder* rec = recorders[static_cast<size_t>(rank)].get();
        auto lane = rec->addLane("sync");
        const trainer::timeline::LaneId sync_lane = lane.isOk() ? *lane : 0;
        mine.on_sync = [rec, sync_lane, &names](const trainer::SyncRecord& r) {
          const auto ns = [](Clock::time_point t) {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
          };
          rec->record(sync_lane, rec->internName(names[r.layer]), trainer::timeline::Category::kSync, ns(r.reported),
                      ns(r.completed), static_cast<int64_t>(r.iteration));
        };
      });
  ASSERT_EQ(failures(statuses), "");
  for (int w = 0; w < kWorkers; ++w) {
    const trainer::timeline::Trace trace = recorders[static_cast<size_t>(w)]->snapshot();
    auto overlaps = trainer::timeline::syncOverlapsWithBackwardBelow(trace, names);
    ASSERT_TRUE(overlaps.isOk()) << overlaps.status().toString();
    // fc2's and fc1's syncs are reported first; conv2's backward (the heaviest) runs after them.
    size_t upper = 0, overlapped = 0;
    for (const auto& o : *overlaps) {
      const std::string& layer = trace.names[o.sync.name];
      if (layer != "fc1" && layer != "fc2") continue;
      ++upper;
      overlapped += o.overlapped_ns > 0;
    }
    EXPECT_EQ(upper, 16u) << "worker " << w;
    EXPECT_GE(overlapped, upper / 2) << "worker " << w << ": too few upper-layer syncs ran during a lower backward";
  }
}

}  // namespace
}  // namespace poseidon::testing
