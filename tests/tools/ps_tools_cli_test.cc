// poseidon-server and poseidon-ps-bench as a user meets them: bad command lines exit 2 naming the
// option and the value, a rank in the wrong role exits 1 naming the rank and the job's layout.
// Nothing here reaches the network.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace poseidon::tools {
namespace {

using poseidon::testing::ProcessResult;
using poseidon::testing::run_process;

ProcessResult runTool(const char* binary, std::vector<std::string> args) {
  args.insert(args.begin(), binary);
  return run_process(args, std::chrono::seconds(20));
}

// A job of one worker (rank 0) and one server (rank 1); the store's port is never reached.
std::vector<std::string> job(std::vector<std::string> extra, const std::string& model = "uniform:4x1024") {
  std::vector<std::string> args = {"--model", model,    "--servers",   "1",        "--size",
                                   "2",       "--root", "127.0.0.1:1", "--secret", "s"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(PsToolsCli, HelpExitsZero) {
  for (const char* binary : {POSEIDON_SERVER_BINARY, POSEIDON_PS_BENCH_BINARY}) {
    const ProcessResult r = runTool(binary, {"--help"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("--model"), std::string::npos) << r.output;
  }
}

TEST(PsToolsCli, BadValuesExitTwoNamingTheOption) {
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--rank", "0", "--size", "2"}, "--model"},  // required
      {job({"--rank", "1"}, "uniform:3"), "uniform:3"},
      {job({"--rank", "1", "--chunk-bytes", "6"}), "--chunk-bytes 6"},
      {job({"--rank", "1", "--chunk-bytes", "1G"}), "--chunk-bytes 1073741824"},
      {job({"--rank", "1", "--consistency", "ssp:x"}), "--consistency"},
      {job({"--rank", "1", "--optimizer", "sgd:lr=oops"}), "--optimizer"},
      {job({"--rank", "1", "--backend", "udp"}), "udp"},
      {job({"--rank", "2"}), "--rank 2"},
      {{"--model", "uniform:4x1024", "--rank", "0"}, "--rank 0 needs --size"},
      {job({"--rank", "1"}, "uniform:1000000x1000000000"), "per server"},
      // Ranges read as numbers, not as 309 digits or a wrapped-around unsigned value.
      {job({"--rank", "-1"}), "-1 is out of range: expected 0 to 2147483646"},
      {job({"--rank", "1", "--chunk-bytes", "-8"}), "'-8': expected a positive size"},
      {job({"--rank", "1", "--chunk-bytes", "-8K"}), "'-8K': expected a positive size"},
      {job({"--rank", "1", "--chunk-bytes", "-4b"}), "'-4b': expected a positive size"},
      {job({"--rank", "1", "--checkpoint-keep", "0"}), "0 is out of range: expected 1 to 1000"},
      // A mistyped checkpoint directory is an error, not a silent start from clock 0.
      {job({"--rank", "1", "--resume", "--checkpoint-dir", "/nonexistent/poseidon-ckpt"}),
       "'/nonexistent/poseidon-ckpt' is not a directory"},
      {job({"--rank", "1", "--resume-if-present"}), "--resume-if-present needs --checkpoint-dir"},
      // Found at start, not at the first checkpoint.
      {job({"--rank", "1", "--checkpoint-dir", "/proc/poseidon-ckpt"}), "--checkpoint-dir: create checkpoint"},
  };
  for (const Case& c : cases) {
    const ProcessResult r = runTool(POSEIDON_SERVER_BINARY, c.args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in: " << r.output;
    // No number in a message may run to more than 20 digits (CLI11's own ranges printed 309).
    size_t run = 0;
    size_t longest = 0;
    for (char ch : r.output) {
      run = (ch >= '0' && ch <= '9') ? run + 1 : 0;
      longest = std::max(longest, run);
    }
    EXPECT_LE(longest, 20u) << r.output;
  }
  const ProcessResult bench = runTool(POSEIDON_PS_BENCH_BINARY, job({"--rank", "0", "--iterations", "0"}));
  EXPECT_EQ(bench.exit_code, 2) << bench.output;
  EXPECT_NE(bench.output.find("--iterations"), std::string::npos) << bench.output;
}

TEST(PsToolsCli, WrongRoleExitsOneNamingRankAndLayout) {
  const ProcessResult server = runTool(POSEIDON_SERVER_BINARY, job({"--rank", "0"}));
  EXPECT_EQ(server.exit_code, 1) << server.output;
  EXPECT_NE(server.output.find("rank 0 is a worker rank of this job (workers on rank 0, servers on rank 1)"),
            std::string::npos)
      << server.output;
  const ProcessResult bench = runTool(POSEIDON_PS_BENCH_BINARY, job({"--rank", "1"}));
  EXPECT_EQ(bench.exit_code, 1) << bench.output;
  EXPECT_NE(bench.output.find("rank 1 is a server rank"), std::string::npos) << bench.output;
}

TEST(PsToolsCli, LayoutThatDoesNotAddUpExitsOne) {
  const ProcessResult r = runTool(POSEIDON_SERVER_BINARY, job({"--rank", "1", "--workers", "3"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--workers 3 + --servers 1 = 4 ranks, but the job has size 2"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace poseidon::tools
