// examples/custom_training_loop as its README launches it: 2 workers and 1 parameter server, three
// processes of the built program that find each other through POSEIDON_RANK / _SIZE / _ROOT on
// 127.0.0.1, for a short run. Every process must exit 0, each worker must print a finite loss at
// its last step, and worker 0 a test accuracy well above chance (10 classes).
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "tests/support/timeouts.h"
#include "transport/bootstrap/tcp_store_server.h"

namespace poseidon::testing {
namespace {

constexpr const char* kBinary = CUSTOM_TRAINING_LOOP_BINARY;
constexpr int kRanks = 3;  // 2 workers + 1 PS server
constexpr const char* kSteps = "30";
constexpr auto kTimeout = std::chrono::seconds(90);

uint16_t unusedPort() {
  auto server = transport::bootstrap::TcpStoreServer::start("127.0.0.1", 0);
  return server ? (*server)->port() : 0;  // closed at once: the example's rank 0 takes it
}

// The loss of "... step 30/30 loss 0.9871 (...)", if the line is there.
std::optional<double> lastLoss(const std::string& output) {
  const std::regex line(std::string("step ") + kSteps + "/" + kSteps + " loss (\\S+)");
  std::smatch match;
  if (!std::regex_search(output, match, line)) return std::nullopt;
  return std::strtod(match[1].str().c_str(), nullptr);
}

std::optional<double> testAccuracy(const std::string& output) {
  std::smatch match;
  if (!std::regex_search(output, match, std::regex("test accuracy (\\S+)"))) return std::nullopt;
  return std::strtod(match[1].str().c_str(), nullptr);
}

TEST(CustomTrainingLoop, TwoWorkersAndAServerTrainAsThreeProcesses) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  TempDir dir;
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  std::vector<std::string> logs;
  for (int rank = 0; rank < kRanks; ++rank) {
    logs.push_back(dir.path() + "/rank" + std::to_string(rank) + ".log");
    ranks.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{"env", "POSEIDON_RANK=" + std::to_string(rank),
                                 "POSEIDON_SIZE=" + std::to_string(kRanks),
                                 "POSEIDON_ROOT=127.0.0.1:" + std::to_string(port), kBinary,
                                 std::string("--steps=") + kSteps, "--batch=32", "--log-every=10"},
        logs.back()));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(kTimeout);
  for (int rank = 0; rank < kRanks; ++rank) {
    ChildProcess& child = *ranks[static_cast<size_t>(rank)];
    while (child.running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int code = child.running() ? child.stop(SIGKILL) : child.exit_code();
    const std::string output = read_file(logs[static_cast<size_t>(rank)]);
    EXPECT_EQ(code, 0) << "rank " << rank << ":\n" << output;
    if (rank == kRanks - 1) continue;  // the server prints no loss
    const std::optional<double> loss = lastLoss(output);
    ASSERT_TRUE(loss.has_value()) << "rank " << rank << " printed no loss of step " << kSteps << ":\n" << output;
    EXPECT_TRUE(std::isfinite(*loss)) << "rank " << rank << ":\n" << output;
    if (rank != 0) continue;
    const std::optional<double> accuracy = testAccuracy(output);
    ASSERT_TRUE(accuracy.has_value()) << output;
    EXPECT_GT(*accuracy, 0.5) << output;
    EXPECT_LE(*accuracy, 1.0) << output;
  }
}

}  // namespace
}  // namespace poseidon::testing
