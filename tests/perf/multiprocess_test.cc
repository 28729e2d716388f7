// poseidon-perf as users run it: a server process and a client process of the real binary on
// 127.0.0.1, for each test; both must exit 0, print perftest's table with one row of positive
// numbers per size (the same rows on both sides), and write JSON that parses.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <algorithm>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support/process.h"
#include "tests/support/timeouts.h"

namespace poseidon::perf {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::free_loopback_port;
using poseidon::testing::ProcessResult;
using poseidon::testing::read_file;
using poseidon::testing::run_process;
using poseidon::testing::scaled;

constexpr const char* kBinary = POSEIDON_PERF_BINARY;
constexpr const char* kSecret = "perf-test-secret";
constexpr auto kClientTimeout = std::chrono::seconds(60);

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/poseidon-perf-test-XXXXXX";
    path_ = ::mkdtemp(pattern) ? pattern : "/tmp";
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct PairRun {
  ProcessResult client;
  int server_exit = -1;
  std::string server_output;
};

// Starts a server (with `server_args`), runs a client (with `client_args`) against it and
// waits for both.
PairRun runPair(const TempDir& dir, const std::vector<std::string>& client_args,
                const std::vector<std::string>& server_args = {}) {
  const std::string port = std::to_string(free_loopback_port());
  std::vector<std::string> server = {kBinary, "-p", port, "--secret", kSecret};
  server.insert(server.end(), server_args.begin(), server_args.end());
  const std::string server_log = dir.file("server.log");
  ChildProcess server_process(server, server_log);
  std::vector<std::string> client = {kBinary};
  client.insert(client.end(), client_args.begin(), client_args.end());
  client.insert(client.end(), {"-p", port, "--secret", kSecret, "127.0.0.1"});
  PairRun run;
  run.client = run_process(client, kClientTimeout);
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(20));
  while (server_process.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  run.server_exit = server_process.running() ? server_process.stop(SIGKILL) : server_process.exit_code();
  run.server_output = read_file(server_log);
  return run;
}

// The lines of the table that starts at the line beginning with `header`, up to the next rule.
struct Table {
  bool found = false;
  std::vector<std::string> lines;
  std::vector<std::vector<double>> rows;
};

Table parseTable(const std::string& output, const std::string& header) {
  Table table;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (!table.found) {
      table.found = line.rfind(header, 0) == 0;
      continue;
    }
    if (line.rfind("---", 0) == 0) break;
    table.lines.push_back(line);
    std::istringstream fields(line);
    std::vector<double> row;
    for (double value; fields >> value;) row.push_back(value);
    table.rows.push_back(row);
  }
  return table;
}

constexpr const char* kBwHeader = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
constexpr const char* kLatHeader = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]";
constexpr const char* kLatDurationHeader = " #bytes        #iterations       t_avg[usec]    tps average";

bool isBandwidth(const std::string& test) { return test.find("_bw") != std::string::npos; }

// Both exited 0; the client's table has `sizes` rows of `fields` numbers, positive (the BW peak
// may be 0 when `peak_zero`, as perftest's duration mode), and the server shows the same rows.
Table expectTable(const PairRun& run, const std::string& header, const std::vector<uint64_t>& sizes, size_t fields,
                  uint64_t iterations, bool peak_zero = false) {
  EXPECT_EQ(run.client.exit_code, 0) << run.client.output;
  EXPECT_EQ(run.server_exit, 0) << run.server_output;
  const Table table = parseTable(run.client.output, header);
  EXPECT_TRUE(table.found) << run.client.output;
  EXPECT_EQ(table.rows.size(), sizes.size()) << run.client.output;
  for (size_t i = 0; i < table.rows.size() && i < sizes.size(); ++i) {
    const auto& row = table.rows[i];
    EXPECT_EQ(row.size(), fields) << table.lines[i];
    if (row.size() != fields) continue;
    EXPECT_EQ(row[0], static_cast<double>(sizes[i])) << table.lines[i];
    if (iterations > 0) {
      EXPECT_EQ(row[1], static_cast<double>(iterations)) << table.lines[i];
    }
    for (size_t f = 1; f < fields; ++f) {
      if (peak_zero && f == 2) {
        EXPECT_EQ(row[f], 0) << table.lines[i];
      } else if (fields == 9 && f == 6) {
        // t_stdev of a few samples that differ by nanoseconds prints as 0.00.
        EXPECT_GE(row[f], 0) << table.lines[i];
      } else if (f >= 2 && sizes[i] * std::max<uint64_t>(iterations, 1) < 65536) {
        // A few bytes over a few iterations on a loaded machine can round to 0.00 MB/s, as in
        // perftest's own table; the figure must still be there and not negative.
        EXPECT_GE(row[f], 0) << "column " << f << " of: " << table.lines[i];
      } else {
        EXPECT_GT(row[f], 0) << "column " << f << " of: " << table.lines[i];
      }
    }
  }
  const Table server = parseTable(run.server_output, header);
  EXPECT_EQ(server.lines, table.lines) << run.server_output;
  return table;
}

class PerfEachTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PerfEachTest, SmallRunPrintsTheTableAndJson) {
  const std::string test = GetParam();
  TempDir dir;
  const std::string json_path = dir.file("result.json");
  const PairRun run = runPair(dir, {test, "-n", "200", "-s", "65536", "--out_json", json_path});
  const bool bw = isBandwidth(test);
  const Table table = expectTable(run, bw ? kBwHeader : kLatHeader, {65536}, bw ? 5 : 9, 200);
  EXPECT_NE(run.client.output.find(bw ? (test == "write_bw" ? "RDMA_Write BW Test" : "Send BW Test")
                                      : (test == "write_lat" ? "RDMA_Write Latency Test" : "Send Latency Test")),
            std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(read_file(json_path), nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << read_file(json_path);
  EXPECT_EQ(j["tool"], "poseidon-perf");
  EXPECT_EQ(j["test"], test);
  EXPECT_EQ(j["transport"], "tcp");
  EXPECT_EQ(j["streams"], 1);
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["bytes"], 65536);
  EXPECT_EQ(j["rows"][0]["iterations"], 200);
  if (bw && !table.rows.empty()) {
    EXPECT_NEAR(j["rows"][0]["bw_average"].get<double>(), table.rows[0][3], 0.01);
  } else if (!table.rows.empty()) {
    EXPECT_NEAR(j["rows"][0]["t_typical_usec"].get<double>(), table.rows[0][4], 0.01);
  }
}

INSTANTIATE_TEST_SUITE_P(AllTests, PerfEachTest, ::testing::Values("write_bw", "send_bw", "write_lat", "send_lat"));

std::vector<uint64_t> allSizes() {
  std::vector<uint64_t> sizes;
  for (uint64_t size = 2; size <= (8u << 20); size *= 2) sizes.push_back(size);
  return sizes;
}

TEST(PerfMultiprocess, AllSizesBandwidth) {
  TempDir dir;
  const PairRun run = runPair(dir, {"write_bw", "-a", "-n", "5"});
  expectTable(run, kBwHeader, allSizes(), 5, 5);
}

TEST(PerfMultiprocess, AllSizesLatency) {
  TempDir dir;
  const PairRun run = runPair(dir, {"send_lat", "-a", "-n", "5"});
  expectTable(run, kLatHeader, allSizes(), 9, 5);
}

TEST(PerfMultiprocess, DurationBandwidthHasNoPeakAsPerftest) {
  TempDir dir;
  const PairRun run = runPair(dir, {"send_bw", "-D", "2", "-s", "65536"});
  expectTable(run, kBwHeader, {65536}, 5, 0, /*peak_zero=*/true);
  EXPECT_NE(run.client.output.find("WARNING: BW peak won't be measured in this run."), std::string::npos);
}

TEST(PerfMultiprocess, DurationLatency) {
  TempDir dir;
  const PairRun run = runPair(dir, {"write_lat", "-D", "2"});
  expectTable(run, kLatDurationHeader, {2}, 4, 0);
}

TEST(PerfMultiprocess, ServerFollowsTheClientsStreamsAndGbits) {
  TempDir dir;
  const PairRun run = runPair(dir, {"send_bw", "-q", "3", "-n", "200", "--report_gbits"}, {"-q", "1"});
  expectTable(run, " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]", {65536}, 5, 200);
  EXPECT_NE(run.server_output.find("following the client: -q/--qp 3 (this server was given 1)"), std::string::npos)
      << run.server_output;
  EXPECT_NE(run.client.output.find(" Number of qps   : 3"), std::string::npos);
}

TEST(PerfMultiprocess, ASecondClientIsToldTheServerIsBusy) {
  TempDir dir;
  const std::string port = std::to_string(free_loopback_port());
  ChildProcess server({kBinary, "-p", port, "--secret", kSecret}, dir.file("server.log"));
  ChildProcess first({kBinary, "write_bw", "-D", "3", "-p", port, "--secret", kSecret, "127.0.0.1"},
                     dir.file("first.log"));
  // Once the first client prints its table header, it owns the server.
  const auto deadline = std::chrono::steady_clock::now() + scaled(std::chrono::seconds(20));
  while (read_file(dir.file("first.log")).find("#bytes") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const ProcessResult second =
      run_process({kBinary, "write_bw", "-p", port, "--secret", kSecret, "127.0.0.1"}, kClientTimeout);
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_NE(second.output.find("already serving another client"), std::string::npos) << second.output;
  while (first.running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(first.running() ? first.stop(SIGKILL) : first.exit_code(), 0) << read_file(dir.file("first.log"));
}

TEST(PerfMultiprocess, NoServerFailsNamingTheAddress) {
  const std::string port = std::to_string(free_loopback_port());
  const ProcessResult run =
      run_process({kBinary, "-p", port, "--timeout", "1", "--secret", kSecret, "127.0.0.1"}, kClientTimeout);
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("127.0.0.1:" + port), std::string::npos) << run.output;
}

TEST(PerfMultiprocess, BadOptionsExitTwoWithAMessage) {
  const ProcessResult run = run_process({kBinary, "-q", "100", "127.0.0.1"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("-q/--qp '100': expected"), std::string::npos) << run.output;
  const ProcessResult help = run_process({kBinary, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("--out_json"), std::string::npos);
}

}  // namespace
}  // namespace poseidon::perf
