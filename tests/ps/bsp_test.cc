// BSP through the parameter server is exactly single-process training: for every optimizer, with
// 1, 2 and 3 servers, workers pushing layers in shuffled order with random delays, the
// parameters after 100 clocks equal (bit for bit) the optimizer applied in one process to the
// workers' gradients summed in rank order.
#include <gtest/gtest.h>

#include <cstring>

#include "ps/shard.h"
#include "tests/ps/ps_cluster.h"
#include "tests/ps/synthetic_training.h"

namespace poseidon::testing {
namespace {

struct Case {
  const char* name;
  const char* optimizer;
  int servers;
};

kernels::OptimizerConfig parse(const char* spec) {
  auto config = kernels::parseOptimizer(spec);
  if (!config) throw StatusError(config.status());
  return *config;
}

// Index of the first float whose bits differ, or -1.
long long firstDifference(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return static_cast<long long>(i);
  }
  return -1;
}

class BspTest : public ::testing::TestWithParam<Case> {};

TEST_P(BspTest, MatchesSingleProcessBitForBit) {
  const Case& c = GetParam();
  constexpr int kWorkers = 3;
  constexpr uint64_t kClocks = 100;
  ClusterSpec spec;
  spec.workers = kWorkers;
  spec.servers = c.servers;
  spec.server.optimizer = parse(c.optimizer);
  spec.train = [&](ps::Client& client, int worker) {
    return trainWorker(client, {worker, kClocks, 17, true}, Deadline::after(std::chrono::seconds(60)));
  };
  const ClusterRun run = runCluster(spec);
  for (int w = 0; w < kWorkers; ++w) ASSERT_TRUE(run.worker_status[w].isOk()) << run.worker_status[w].toString();
  for (int s = 0; s < c.servers; ++s) ASSERT_TRUE(run.server_status[s].isOk()) << run.server_status[s].toString();

  const std::vector<float> expected = referenceTraining(spec.server.optimizer, kWorkers, kClocks);
  for (int w = 0; w < kWorkers; ++w) {
    const long long at = firstDifference(run.worker_params[w], expected);
    EXPECT_EQ(at, -1) << "worker " << w << " float " << at << ": " << run.worker_params[w][at] << " vs "
                      << expected[at];
  }
  // Each server's shard holds the same bits at its chunks' places in the model.
  auto layout = ps::ChunkLayout::build(syntheticModel().tensors(), c.servers, spec.chunk_bytes);
  for (int s = 0; s < c.servers; ++s) {
    const ps::Shard shard = ps::Shard::of(*layout, s);
    for (const ps::ShardChunk& chunk : shard.chunks) {
      const std::span<const float> held(run.server_params[s].data() + chunk.offset / 4, chunk.bytes / 4);
      const std::span<const float> want(expected.data() + chunk.model_offset / 4, chunk.bytes / 4);
      ASSERT_EQ(firstDifference(held, want), -1) << "server " << s << " chunk " << chunk.global;
    }
  }
  // Training moved the parameters (a test that cannot fail would pass with none of this working).
  std::vector<float> initial(expected.size());
  initialParameters(initial);
  EXPECT_NE(firstDifference(initial, expected), -1);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, BspTest,
    ::testing::Values(Case{"sgd_momentum_wd_1", "sgd:lr=0.05,momentum=0.9,wd=1e-3", 1},
                      Case{"sgd_momentum_wd_2", "sgd:lr=0.05,momentum=0.9,wd=1e-3", 2},
                      Case{"sgd_momentum_wd_3", "sgd:lr=0.05,momentum=0.9,wd=1e-3", 3},
                      Case{"sgd_nesterov_step_2",
                           "sgd:lr=0.1,momentum=0.5,nesterov=1,schedule=step,step_size=30,gamma=0.5", 2},
                      Case{"adagrad_1", "adagrad:lr=0.05,init=0.1", 1},
                      Case{"adagrad_2", "adagrad:lr=0.05,init=0.1", 2},
                      Case{"adagrad_3", "adagrad:lr=0.05,init=0.1", 3},
                      Case{"adam_cosine_1", "adam:lr=0.01,schedule=cosine,max_steps=100", 1},
                      Case{"adam_cosine_2", "adam:lr=0.01,schedule=cosine,max_steps=100", 2},
                      Case{"adam_poly_3", "adam:lr=0.01,wd=1e-4,schedule=poly,max_steps=100,power=0.9", 3}),
    [](const ::testing::TestParamInfo<Case>& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace poseidon::testing
