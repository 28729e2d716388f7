// Report formatting: perftest's tables to the byte, units, the JSON both sides exchange, and the
// checks on what a peer sends (parameters and results).
#include <gtest/gtest.h>

#include <cstdio>

#include "tools/perf/parameters.h"
#include "tools/perf/report.h"

namespace poseidon::perf {
namespace {

RunParameters bwParams() {
  RunParameters p;
  p.test = TestKind::kWriteBw;
  p.sizes = {65536};
  p.iterations = 5000;
  return p;
}

TEST(PerfReport, BandwidthTableLinesUpWithPerftest) {
  const RunParameters p = bwParams();
  EXPECT_EQ(tableHeader(p), " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  const BwRow row{65536, 5000, 11030.05, 11029.27, 0.176468};
  // perftest 4.5: REPORT_FMT " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf".
  EXPECT_EQ(formatRow(row, false), " 65536      5000             11030.05            11029.27\t\t   0.176468\n");
}

TEST(PerfReport, GbitsUseGbAndPerftestsExtendedFormatBelowATenth) {
  RunParameters p = bwParams();
  p.report_gbits = true;
  EXPECT_EQ(tableHeader(p), " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
  EXPECT_EQ(formatRow(BwRow{2, 1000, 0.05, 0.04, 2.5}, true),
            " 2          1000           0.050000            0.040000            2.500000\n");
}

TEST(PerfReport, UnitsArePerftests) {
  // 1000 messages of 1 MiB in one second: 1000 MiB/s, 8.388608 Gb/s (10^9 bits), 0.001 Mpps.
  const BwRow mb = makeBwRow(1 << 20, 1000, 1.0, 2000.0, false);
  EXPECT_DOUBLE_EQ(mb.bw_average, 1000.0);
  EXPECT_DOUBLE_EQ(mb.bw_peak, 2000.0);
  EXPECT_DOUBLE_EQ(mb.msg_rate, 0.001);
  const BwRow gb = makeBwRow(1 << 20, 1000, 1.0, 0, true);
  EXPECT_DOUBLE_EQ(gb.bw_average, 8.388608);
  EXPECT_EQ(gb.bw_peak, 0);
}

TEST(PerfReport, LatencyTablesLineUpWithPerftest) {
  RunParameters p = bwParams();
  p.test = TestKind::kSendLat;
  EXPECT_EQ(tableHeader(p),
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
            "99% percentile[usec]   99.9% percentile[usec] \n");
  LatencyStats s;
  s.t_min = 0.88;
  s.t_max = 6.84;
  s.t_typical = 0.98;
  s.t_avg = 1.03;
  s.t_stdev = 0.2;
  s.p99 = 1.21;
  s.p99_9 = 5.42;
  EXPECT_EQ(formatRow(LatRow{2, 20000, s}, false),
            " 2       20000          0.88           6.84         0.98     \t       1.03        \t0.20   \t\t1.21    "
            "\t\t5.42   \n");
  p.duration_s = 5;
  EXPECT_EQ(tableHeader(p), " #bytes        #iterations       t_avg[usec]    tps average\n");
  EXPECT_EQ(formatRow(LatDurationRow{2, 1234, 18.75, 26664.42}, false),
            " 2             1234            18.75          26664.42\n");
}

TEST(PerfReport, HeaderBlockNamesTheRun) {
  RunParameters p = bwParams();
  p.streams = 4;
  SideInfo side{false, "tcp 10.0.0.2", "10.0.0.2:4000", "rank 0 (10.0.0.1:5000)"};
  const std::string block = testInfoBlock(p, side);
  EXPECT_EQ(block.rfind(resultLine(), 0), 0u);
  EXPECT_NE(block.find("RDMA_Write BW Test"), std::string::npos);
  EXPECT_NE(block.find(" Number of qps   : 4\t\tTransport type : TCP"), std::string::npos);
  EXPECT_NE(block.find(" TX depth        : 128"), std::string::npos);
  EXPECT_NE(block.find(" remote address: rank 0 (10.0.0.1:5000)"), std::string::npos);
  side.server = true;
  EXPECT_EQ(testInfoBlock(p, side).find("TX depth"), std::string::npos);
}

TEST(PerfReport, HeaderBlockShowsTheLinkLikePerftest) {
  RunParameters p = bwParams();
  SideInfo side{false, "tcp 10.0.0.2", "10.0.0.2:4000", "rank 0 (10.0.0.1:5000)", LinkInfo{0, "IP", -1, ""}};
  std::string block = testInfoBlock(p, side);
  EXPECT_NE(block.find(" Mtu             : n/a\n Link type       : IP\n Max inline"), std::string::npos) << block;
  EXPECT_EQ(block.find("GID"), std::string::npos) << block;
  // perftest over RoCE: "Mtu : 1024[B]", "Link type : Ethernet", "GID index : 1".
  p.transport = "verbs";
  side.link = LinkInfo{1024, "Ethernet", 1, "::ffff:10.0.2.15"};
  block = testInfoBlock(p, side);
  EXPECT_NE(block.find(" Mtu             : 1024[B]\n Link type       : Ethernet\n GID index       : 1\n"),
            std::string::npos)
      << block;
  EXPECT_NE(block.find(" local address: 10.0.0.2:4000\n GID: ::ffff:10.0.2.15\n remote address:"), std::string::npos)
      << block;
}

TEST(PerfReport, JsonRowsRoundTrip) {
  Report report{bwParams(), {BwRow{4096, 200, 10.5, 9.25, 0.0024}, BwRow{8192, 200, 20.5, 19.25, 0.0012}}};
  const nlohmann::json j = reportToJson(report);
  EXPECT_EQ(j["tool"], "poseidon-perf");
  EXPECT_EQ(j["test"], "write_bw");
  EXPECT_EQ(j["transport"], "tcp");
  EXPECT_EQ(j["streams"], 1);
  EXPECT_EQ(j["bw_unit"], "MB/sec");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][1]["bytes"], 8192);
  EXPECT_EQ(j["rows"][1]["bw_average"], 19.25);
  report.params.sizes = {4096, 8192};
  auto rows = rowsFromJson(j.dump(), report.params);
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ(formatRow((*rows)[0], false), formatRow(report.rows[0], false));
}

TEST(PerfReport, LatencyJsonRoundTrip) {
  RunParameters p = bwParams();
  p.test = TestKind::kWriteLat;
  LatencyStats s;
  s.t_min = 1;
  s.t_max = 9;
  s.p99_9 = 8;
  const Report report{p, {LatRow{2, 1000, s}}};
  const nlohmann::json j = reportToJson(report);
  EXPECT_EQ(j["latency_unit"], "usec");
  EXPECT_EQ(j["rows"][0]["p99_9_usec"], 8.0);
  auto rows = rowsFromJson(j.dump(), p);
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  EXPECT_EQ(formatRow((*rows)[0], false), formatRow(report.rows[0], false));
}

TEST(PerfReport, ResultsFromThePeerAreChecked) {
  const RunParameters p = bwParams();
  EXPECT_FALSE(rowsFromJson("not json", p).isOk());
  EXPECT_FALSE(rowsFromJson(R"({"row_kind":"lat","rows":[]})", p).isOk());
  EXPECT_FALSE(rowsFromJson(R"({"row_kind":"bw","rows":[{"bytes":1}]})", p).isOk());
  const auto negative = rowsFromJson(
      R"({"row_kind":"bw","rows":[{"bytes":1,"iterations":5,"bw_peak":-1,"bw_average":1,"msg_rate_mpps":1}]})", p);
  ASSERT_FALSE(negative.isOk());
  EXPECT_NE(negative.status().message().find("bw_peak"), std::string::npos);
  const auto too_many = rowsFromJson(R"({"row_kind":"bw","rows":[{},{}]})", p);
  EXPECT_FALSE(too_many.isOk());
  const auto failed = rowsFromJson(R"({"error":"Timeout: no ack"})", p);
  ASSERT_FALSE(failed.isOk());
  EXPECT_NE(failed.status().message().find("the client failed: Timeout: no ack"), std::string::npos);
}

TEST(PerfParameters, RoundTripAndChecks) {
  RunParameters p = bwParams();
  p.test = TestKind::kSendBw;
  p.streams = 3;
  p.sizes = allSizes();
  p.server_address = "10.0.0.1";
  auto back = parametersFromJson(parametersToJson(p));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  EXPECT_EQ(back->test, TestKind::kSendBw);
  EXPECT_EQ(back->streams, 3);
  EXPECT_EQ(back->sizes, p.sizes);
  EXPECT_EQ(back->server_address, "10.0.0.1");

  auto reject = [](const std::string& text, const std::string& fragment) {
    auto parsed = parametersFromJson(text);
    ASSERT_FALSE(parsed.isOk()) << text;
    EXPECT_NE(parsed.status().message().find(fragment), std::string::npos) << parsed.status().message();
  };
  nlohmann::json j = nlohmann::json::parse(parametersToJson(p));
  j["streams"] = 65;
  reject(j.dump(), "-q/--qp 65");
  j = nlohmann::json::parse(parametersToJson(p));
  j["version"] = 99;
  reject(j.dump(), "version 99");
  j = nlohmann::json::parse(parametersToJson(p));
  j["test"] = "read_bw";
  reject(j.dump(), "read_bw");
  j = nlohmann::json::parse(parametersToJson(p));
  j["sizes"] = std::vector<uint64_t>{0};
  reject(j.dump(), "-s/--size 0");
  j = nlohmann::json::parse(parametersToJson(p));
  j.erase("tx_depth");
  reject(j.dump(), "tx_depth");
  reject("[]", "do not parse");
}

}  // namespace
}  // namespace poseidon::perf
