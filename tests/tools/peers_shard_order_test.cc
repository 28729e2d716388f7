// tools/bench-peers trains PyTorch DDP on poseidon-train's shards: its shard_order.py must give the
// C++ order bit for bit (trainer/data/epoch_shuffle.h, shard.h). Runs the script with Debian's
// /usr/bin/python3 (the interpreter bench-peers uses; the script itself needs no torch) and
// compares whole epochs' permutations and one worker's batches of an epoch. Skips, saying why,
// where /usr/bin/python3 is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "trainer/data/epoch_shuffle.h"
#include "trainer/data/shard.h"

namespace poseidon::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::vector<uint32_t> pythonOrder(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kPython, POSEIDON_SHARD_ORDER_SCRIPT};
  argv.insert(argv.end(), args.begin(), args.end());
  const ProcessResult result = run_process(argv, std::chrono::seconds(20));
  EXPECT_EQ(result.exit_code, 0) << result.output;
  std::vector<uint32_t> out;
  std::istringstream in(result.output);
  for (uint64_t index; in >> index;) out.push_back(static_cast<uint32_t>(index));
  return out;
}

class PeersShardOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is absent: tools/bench-peers cannot run here";
  }
};

TEST_F(PeersShardOrder, EpochPermutationsEqualTheCppOnes) {
  // poseidon-train's run (seed 1, Fashion-MNIST's 60000, three epochs) and a small odd case.
  for (uint64_t epoch : {0, 1, 2}) {
    EXPECT_EQ(pythonOrder({"1", std::to_string(epoch), "60000"}), trainer::data::epochPermutation(1, epoch, 60000))
        << "seed 1, epoch " << epoch;
  }
  EXPECT_EQ(pythonOrder({"123456789", "7", "1001"}), trainer::data::epochPermutation(123456789, 7, 1001));
}

TEST_F(PeersShardOrder, AWorkersBatchesEqualTheSharders) {
  // 4 workers of batch 16, as the benchmark trains: worker 2's batches of epoch 1, step by step.
  trainer::data::ShardConfig config{.seed = 1, .workers = 4, .rank = 2, .batch = 16};
  auto sharder = trainer::data::EpochSharder::create(60000, config);
  ASSERT_TRUE(sharder.isOk()) << sharder.status().toString();
  std::vector<uint32_t> expected;
  for (uint64_t step = 0; step < sharder->stepsPerEpoch(); ++step) {
    auto batch = sharder->batch({1, step});
    ASSERT_TRUE(batch.isOk()) << batch.status().toString();
    expected.insert(expected.end(), batch->begin(), batch->end());
  }
  EXPECT_EQ(pythonOrder({"1", "1", "60000", "4", "2", "16"}), expected);
}

TEST_F(PeersShardOrder, BadArgumentsExitTwoNamingThem) {
  const ProcessResult result = run_process({kPython, POSEIDON_SHARD_ORDER_SCRIPT, "1", "x", "3"});
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("1 x 3"), std::string::npos) << result.output;
}

}  // namespace
}  // namespace poseidon::testing
