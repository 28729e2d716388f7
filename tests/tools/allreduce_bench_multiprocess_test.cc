// poseidon-allreduce-bench as tools/bench-peers runs it, in small: 2 ranks as processes on
// loopback, a few sizes (one below a piece, one of several pieces, one not a multiple of the
// ranks' segments); the bench checks every call's sum itself and exits 1 on a wrong one, so exit 0
// and one sane CSV row per size is the result. And bad command lines exit 2 naming the value.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/timeouts.h"

namespace poseidon::testing {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(AllreduceBenchMultiprocess, TwoRanksSumEverySizeCorrectly) {
  const std::string root = "POSEIDON_ROOT=127.0.0.1:" + std::to_string(free_loopback_port());
  const std::string base = ::testing::TempDir() + "allreduce-bench-" + std::to_string(getpid());
  // 4 KiB, 64 KiB, 1 MiB + 12 bytes' worth via --factor 16 from 4108: 4108, 65728, 1051648.
  // --payload-crc on for rank 0, off for rank 1: each rank's choice is for what it sends, and a
  // mixed job sums alike.
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{"env",
                                                                            "POSEIDON_RANK=" + std::to_string(r),
                                                                            "POSEIDON_SIZE=2",
                                                                            root,
                                                                            "POSEIDON_SECRET=allreduce-test",
                                                                            POSEIDON_ALLREDUCE_BENCH_BINARY,
                                                                            "--min-bytes",
                                                                            "4108",
                                                                            "--max-bytes",
                                                                            "1100000",
                                                                            "--factor",
                                                                            "16",
                                                                            "--piece-bytes",
                                                                            "65536",
                                                                            "--staging-slots",
                                                                            "2",
                                                                            "--max-iters",
                                                                            "5",
                                                                            "--timeout",
                                                                            "20",
                                                                            "--payload-crc",
                                                                            r == 0 ? "on" : "off"},
                                                   base + ".rank" + std::to_string(r) + ".log"));
  }
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(25));
  for (auto& rank : ranks) {
    while (rank->running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  for (int r = 0; r < 2; ++r) {
    const int code = ranks[r]->running() ? ranks[r]->stop(SIGKILL) : ranks[r]->exit_code();
    EXPECT_EQ(code, 0) << "rank " << r << ":\n" << read_file(base + ".rank" + std::to_string(r) + ".log");
  }
  const std::vector<std::string> rows = lines(read_file(base + ".rank0.log"));
  ASSERT_EQ(rows.size(), 4u) << read_file(base + ".rank0.log");
  EXPECT_EQ(rows[0], "bytes,iters,median_us,mean_us,min_us,algbw_gbps,busbw_gbps,cpu_us");
  const uint64_t sizes[] = {4108, 65728, 1051648};
  for (size_t i = 0; i < 3; ++i) {
    std::istringstream row(rows[i + 1]);
    uint64_t bytes = 0, iters = 0;
    char comma = 0;
    double median_us = 0;
    row >> bytes >> comma >> iters >> comma >> median_us;
    EXPECT_EQ(bytes, sizes[i]) << rows[i + 1];
    EXPECT_EQ(iters, 5u) << rows[i + 1];
    EXPECT_GT(median_us, 0.0) << rows[i + 1];
    // The last column, both ranks' CPU per call: a sum of 1 MiB's floats takes some.
    const double cpu_us = std::stod(rows[i + 1].substr(rows[i + 1].rfind(',') + 1));
    if (bytes > (1 << 20)) {
      EXPECT_GT(cpu_us, 0.0) << rows[i + 1];
    }
  }
  // Rank 1 prints no rows.
  EXPECT_EQ(read_file(base + ".rank1.log").find("bytes,"), std::string::npos);
}

TEST(AllreduceBenchMultiprocess, BadOptionsExitTwoNamingTheValue) {
  struct Case {
    std::vector<std::string> argv;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--min-bytes", "4098"}, "--min-bytes 4098"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--max-bytes", "1024"}, "--max-bytes 1024"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--factor", "1"}, "--factor 1"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--piece-bytes", "6"}, "--piece-bytes 6"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--staging-slots", "0"}, "--staging-slots 0"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--backend", "udp"}, "--backend 'udp'"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--payload-crc", "maybe"}, "--payload-crc 'maybe'"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--rank", "3", "--size", "2"}, "--rank 3 --size 2"},
      {{POSEIDON_ALLREDUCE_BENCH_BINARY, "--min-bytes", "lots"}, "--min-bytes"},
  };
  for (const Case& c : cases) {
    const ProcessResult result = run_process(c.argv);
    EXPECT_EQ(result.exit_code, 2) << c.expected << ":\n" << result.output;
    EXPECT_NE(result.output.find(c.expected), std::string::npos) << result.output;
  }
}

}  // namespace
}  // namespace poseidon::testing
