// poseidon-perf's command line: perftest's defaults per test, positionals in either order, and
// every bad value rejected with exit code 2 and a message naming the option, the value and what
// was expected.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tools/perf/options.h"
#include "tools/perf/parameters.h"
#include "tools/perf/run.h"

namespace poseidon::perf {
namespace {

ParsedOptions parse(std::vector<std::string> args, const char* env_secret = nullptr) {
  args.insert(args.begin(), "poseidon-perf");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return parseOptions(static_cast<int>(argv.size()), argv.data(), env_secret);
}

Options ok(std::vector<std::string> args) {
  ParsedOptions parsed = parse(std::move(args));
  EXPECT_TRUE(parsed.options.has_value()) << parsed.message;
  EXPECT_EQ(parsed.exit_code, 0);
  return parsed.options.value_or(Options{});
}

// The command line is rejected with exit code 2 and a message holding every `fragment`.
void rejected(std::vector<std::string> args, const std::vector<std::string>& fragments) {
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  ParsedOptions parsed = parse(std::move(args));
  EXPECT_FALSE(parsed.options.has_value()) << joined;
  EXPECT_EQ(parsed.exit_code, 2) << joined;
  for (const std::string& fragment : fragments) {
    EXPECT_NE(parsed.message.find(fragment), std::string::npos) << joined << "-> " << parsed.message;
  }
}

TEST(PerfOptions, ServerWithPerftestDefaults) {
  const Options o = ok({});
  EXPECT_TRUE(o.isServer());
  EXPECT_EQ(o.test, TestKind::kWriteBw);
  EXPECT_EQ(o.port, 18515);
  EXPECT_EQ(o.size, 65536u);
  EXPECT_EQ(o.iterations, 5000u);
  EXPECT_EQ(o.tx_depth, 128);
  EXPECT_EQ(o.streams, 1);
  EXPECT_EQ(o.transport, "tcp");
}

TEST(PerfOptions, DefaultsFollowTheTest) {
  const Options send_bw = ok({"send_bw", "host"});
  EXPECT_EQ(send_bw.iterations, 1000u);
  EXPECT_EQ(send_bw.size, 65536u);
  const Options lat = ok({"--test", "write_lat", "host"});
  EXPECT_EQ(lat.test, TestKind::kWriteLat);
  EXPECT_EQ(lat.size, 2u);
  EXPECT_EQ(lat.iterations, 1000u);
  EXPECT_EQ(lat.tx_depth, 1);
}

TEST(PerfOptions, PositionalsInEitherPlace) {
  const Options a = ok({"send_lat", "-s", "64K", "10.0.0.2"});
  EXPECT_EQ(a.test, TestKind::kSendLat);
  EXPECT_EQ(a.host, "10.0.0.2");
  EXPECT_EQ(a.size, 65536u);
  const Options b = ok({"10.0.0.2", "-n", "200", "write_bw"});
  EXPECT_EQ(b.test, TestKind::kWriteBw);
  EXPECT_EQ(b.host, "10.0.0.2");
  EXPECT_EQ(b.iterations, 200u);
  EXPECT_TRUE(b.iterations_given);
}

TEST(PerfOptions, EveryPerftestOption) {
  const Options o = ok({"-s",
                        "1M",
                        "-n",
                        "10",
                        "-q",
                        "4",
                        "-p",
                        "19000",
                        "-t",
                        "verbs",
                        "--tx-depth",
                        "16",
                        "-r",
                        "64",
                        "-Q",
                        "8",
                        "--report_gbits",
                        "--out_json",
                        "r.json",
                        "--secret",
                        "x",
                        "--bind",
                        "10.0.0.1",
                        "--busy-poll",
                        "--timeout",
                        "5",
                        "h"});
  EXPECT_EQ(o.size, 1u << 20);
  EXPECT_EQ(o.iterations, 10u);
  EXPECT_EQ(o.streams, 4);
  EXPECT_EQ(o.port, 19000);
  EXPECT_EQ(o.transport, "verbs");
  EXPECT_EQ(o.tx_depth, 16);
  EXPECT_EQ(o.rx_depth, 64);
  EXPECT_EQ(o.cq_mod, 8);
  EXPECT_TRUE(o.report_gbits);
  EXPECT_EQ(o.out_json, "r.json");
  EXPECT_EQ(o.secret, "x");
  EXPECT_EQ(o.bind, "10.0.0.1");
  EXPECT_TRUE(o.busy_poll);
  EXPECT_EQ(o.timeout_s, 5);
}

TEST(PerfOptions, GidIndexIsPerftestsDashX) {
  EXPECT_EQ(ok({"-t", "verbs", "h"}).gid_index, -1);
  EXPECT_EQ(ok({"-t", "verbs", "-x", "3", "h"}).gid_index, 3);
  EXPECT_EQ(ok({"-t", "verbs", "--gid-index", "0", "h"}).gid_index, 0);
  // A server learns the transport from its client, so it may take -x on its own.
  EXPECT_EQ(ok({"-x", "1"}).gid_index, 1);
  rejected({"-t", "verbs", "-x", "256", "h"}, {"-x/--gid-index", "'256'", "0 to 255"});
  rejected({"-t", "verbs", "-x", "-1", "h"}, {"-x/--gid-index", "'-1'"});
  rejected({"-x", "1", "h"}, {"-x/--gid-index 1", "-t verbs"});
}

TEST(PerfOptions, AllSizesAreTwoToEightMiB) {
  const Options o = ok({"-a", "h"});
  const RunParameters p = clientParameters(o);
  ASSERT_EQ(p.sizes.size(), 23u);
  EXPECT_EQ(p.sizes.front(), 2u);
  EXPECT_EQ(p.sizes.back(), 8u << 20);
  for (size_t i = 1; i < p.sizes.size(); ++i) EXPECT_EQ(p.sizes[i], 2 * p.sizes[i - 1]);
}

TEST(PerfOptions, DurationTakesAQuarterMarginAsPerftest) {
  const Options o = ok({"-D", "8", "h"});
  EXPECT_EQ(o.duration_s, 8);
  EXPECT_EQ(o.margin_s, 2);
  const RunParameters p = clientParameters(o);
  EXPECT_TRUE(p.durationMode());
  EXPECT_EQ(checkParameters(p), "");
  EXPECT_EQ(ok({"-D", "5", "-f", "2", "h"}).margin_s, 2);
}

TEST(PerfOptions, LatencyTestsSpinLikePerftestPolls) {
  const Options defaults = ok({"h"});
  EXPECT_EQ(defaults.spinNanos(TestKind::kWriteBw), -1);  // the transport's own default
  EXPECT_EQ(defaults.spinNanos(TestKind::kSendLat), int64_t{kLatencySpinMicros} * 1000);
  const Options zero = ok({"--spin-us", "0", "h"});
  EXPECT_EQ(zero.spinNanos(TestKind::kSendLat), 0);
  EXPECT_EQ(zero.spinNanos(TestKind::kSendBw), 0);
  rejected({"--spin-us", "2000000", "h"}, {"--spin-us", "'2000000'", "microseconds"});
}

TEST(PerfOptions, SecretFromTheEnvironmentUnlessGiven) {
  EXPECT_EQ(parse({"h"}, "from-env").options->secret, "from-env");
  EXPECT_EQ(parse({"--secret", "flag", "h"}, "from-env").options->secret, "flag");
  EXPECT_EQ(parse({"h"}, nullptr).options->secret, "");
}

TEST(PerfOptions, HelpExitsZeroWithTheOptions) {
  const ParsedOptions parsed = parse({"--help"});
  EXPECT_FALSE(parsed.options.has_value());
  EXPECT_EQ(parsed.exit_code, 0);
  EXPECT_NE(parsed.message.find("--tx-depth"), std::string::npos);
  EXPECT_NE(parsed.message.find("--report_gbits"), std::string::npos);
}

TEST(PerfOptions, BadValuesNameTheOptionTheValueAndWhatWasExpected) {
  rejected({"-s", "0", "h"}, {"-s/--size", "'0'", "expected a message size"});
  rejected({"-s", "12x", "h"}, {"-s/--size", "'12x'", "expected"});
  rejected({"-s", "2G", "h"}, {"-s/--size", "'2G'", "1073741824"});
  rejected({"-n", "3", "h"}, {"-n/--iters", "'3'", "from 5 to 100000000"});
  rejected({"-n", "-7", "h"}, {"-n"});
  rejected({"-n", "1e3", "h"}, {"-n/--iters", "'1e3'"});
  rejected({"-q", "0", "h"}, {"-q/--qp", "'0'", "from 1 to 64"});
  rejected({"-q", "65", "h"}, {"-q/--qp", "'65'"});
  rejected({"-p", "70000", "h"}, {"-p/--port", "'70000'", "TCP port"});
  rejected({"-p", "0", "h"}, {"-p/--port", "'0'"});
  rejected({"-t", "128", "h"}, {"-t/--transport", "'128'", "tcp or verbs", "--tx-depth"});
  rejected({"--tx-depth", "0", "h"}, {"--tx-depth", "'0'", "from 1 to 15000"});
  rejected({"-r", "99999", "h"}, {"-r/--rx-depth", "'99999'"});
  rejected({"-Q", "2000", "h"}, {"-Q/--cq-mod", "'2000'"});
  rejected({"-D", "0", "h"}, {"-D/--duration", "'0'", "seconds"});
  rejected({"-D", "4", "-f", "2", "h"}, {"-f/--margin", "'2'", "DURATION > 2*MARGIN"});
  rejected({"--test", "read_bw", "h"}, {"--test", "'read_bw'", "send_bw, write_bw, send_lat, write_lat"});
  rejected({"--timeout", "0", "h"}, {"--timeout", "'0'"});
  rejected({"--out_json", "/nonexistent-dir/r.json", "h"}, {"--out_json", "existing directory"});
}

TEST(PerfOptions, ContradictionsAreRejected) {
  rejected({"-a", "-s", "4096", "h"}, {"-a/--all", "-s/--size"});
  rejected({"-D", "5", "-n", "100", "h"}, {"-D/--duration", "-n/--iters"});
  rejected({"-D", "5", "-a", "h"}, {"-D/--duration", "-a/--all"});
  rejected({"-f", "1", "h"}, {"-f/--margin", "-D/--duration"});
  rejected({"h1", "h2"}, {"'h1'", "'h2'", "at most one server host"});
  rejected({"send_bw", "--test", "write_bw", "h"}, {"--test 'write_bw'", "contradicts"});
  rejected({"--no-such-option", "h"}, {"--no-such-option"});
}

TEST(PerfOptions, ByteSizes) {
  EXPECT_EQ(parseByteSize("65536"), 65536u);
  EXPECT_EQ(parseByteSize("64K"), 65536u);
  EXPECT_EQ(parseByteSize("8m"), 8u << 20);
  EXPECT_EQ(parseByteSize("1G"), 1u << 30);
  EXPECT_FALSE(parseByteSize(""));
  EXPECT_FALSE(parseByteSize("K"));
  EXPECT_FALSE(parseByteSize("-1"));
  EXPECT_FALSE(parseByteSize("1.5M"));
  EXPECT_FALSE(parseByteSize("99999999999999999999"));
  EXPECT_FALSE(parseByteSize("18014398509481984K"));  // overflows 64 bits
}

}  // namespace
}  // namespace poseidon::perf
