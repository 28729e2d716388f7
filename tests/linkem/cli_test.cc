// poseidon-linkem's command line: every bad value is refused with exit code 2 and a message that
// names the option, the value and what was expected. None of these get as far as a namespace.

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace poseidon::linkem::test {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::ProcessResult;
using poseidon::testing::read_file;
using poseidon::testing::run_process;

ProcessResult linkem(std::vector<std::string> args) {
  args.insert(args.begin(), POSEIDON_LINKEM_BINARY);
  return run_process(args);
}

struct BadCase {
  std::vector<std::string> args;
  std::string expected;  // a piece of the message
};

std::string missing_ns() { return "plk-missing-" + std::to_string(::getpid()); }

TEST(LinkemCli, HelpListsTheOptions) {
  const ProcessResult r = linkem({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* option : {"--ns-a", "--ns-b", "--addr-a", "--addr-b", "--dev-name", "--delay-ms", "--jitter-ms",
                             "--loss", "--rate-mbit", "--seed", "--mtu", "--duration-s", "--ready-file"})
    EXPECT_NE(r.output.find(option), std::string::npos) << option << " missing from\n" << r.output;
}

TEST(LinkemCli, BadValuesExitWithCode2AndSayWhy) {
  const std::vector<std::string> ns = {"--ns-a", missing_ns() + "a", "--ns-b", missing_ns() + "b"};
  const std::vector<BadCase> cases = {
      {{}, "--ns-a is required"},
      {{"--loss", "1.5"}, "--loss '1.5': expected a loss probability from 0 to 1"},
      {{"--loss", "-0.1"}, "--loss '-0.1'"},
      {{"--loss", "nan"}, "--loss 'nan'"},
      {{"--delay-ms", "abc"}, "--delay-ms 'abc': expected a one-way delay in milliseconds"},
      {{"--delay-ms", "-5"}, "--delay-ms '-5'"},
      {{"--delay-ms", "inf"}, "--delay-ms 'inf'"},
      {{"--jitter-ms", "20x"}, "--jitter-ms '20x'"},
      {{"--rate-mbit", "-1"}, "--rate-mbit '-1': expected a rate in Mbit/s"},
      {{"--seed", "-1"}, "--seed '-1': expected an unsigned 64-bit integer"},
      {{"--seed", "99999999999999999999999"}, "--seed '99999999999999999999999'"},
      {{"--mtu", "10"}, "--mtu '10': expected an MTU in bytes from 68 to 65535"},
      {{"--mtu", "70000"}, "--mtu '70000'"},
      {{"--queue-limit", "0"}, "--queue-limit '0'"},
      {{"--duration-s", "-1"}, "--duration-s '-1': expected seconds"},
      {{"--addr-a", "10.77.0.300/24"}, "--addr-a '10.77.0.300/24': expected an IPv4 address"},
      {{"--addr-a", "10.77.0.1"}, "--addr-a '10.77.0.1': expected an IPv4 address"},
      {{"--addr-b", "10.77.0.2/32"}, "--addr-b '10.77.0.2/32'"},
      {{"--addr-b", "10.78.0.2/24"}, "--addr-b '10.78.0.2/24': expected an address in the same"},
      {{"--addr-b", "10.77.0.1/24"}, "expected an address different from --addr-a"},
      {{"--addr-b", "10.77.0.255/24"}, "--addr-b '10.77.0.255/24': expected a host address"},
      {{"--dev-name", "a-very-long-device-name"}, "--dev-name 'a-very-long-device-name'"},
      {{"--dev-name", "bad/name"}, "--dev-name 'bad/name'"},
      {{"--ready-file", "/nonexistent-dir-xyz/ready"}, "--ready-file '/nonexistent-dir-xyz/ready'"},
      {{"--no-such-option", "1"}, "--no-such-option"},
      {{"--delay-ms"}, "--delay-ms"},
      {{}, "--ns-a '" + missing_ns() + "a': no such network namespace"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::vector<std::string> args = cases[i].args;
    if (i > 0) args.insert(args.begin(), ns.begin(), ns.end());
    const ProcessResult r = linkem(args);
    EXPECT_EQ(r.exit_code, 2) << "case " << i << ": " << r.output;
    EXPECT_NE(r.output.find(cases[i].expected), std::string::npos)
        << "case " << i << ": expected '" << cases[i].expected << "' in\n"
        << r.output;
  }
}

TEST(LinkemCli, SameNamespaceTwiceIsRefused) {
  const ProcessResult r = linkem({"--ns-a", missing_ns(), "--ns-b", missing_ns()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--ns-b '" + missing_ns() + "': expected a namespace different from"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace poseidon::linkem::test
