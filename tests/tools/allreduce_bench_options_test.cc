// poseidon-allreduce-bench's command line reaches the device it opens: --payload-crc off must
// turn the check off (bench-peers measures what it costs that way, and a job of mixed ranks sums
// alike either way, so the multiprocess test alone could not tell an ignored flag).
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tools/ring-bench/allreduce_options.h"

namespace poseidon::tools {
namespace {

// The options as main() has them after parsing `args`; fails the test on a parse or check error.
AllreduceBenchCommandLine parsed(std::vector<std::string> args, const char* environment_secret = nullptr) {
  CLI::App app;
  AllreduceBenchCommandLine c;
  addAllreduceBenchOptions(app, c);
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
  app.parse(args);
  EXPECT_EQ(checkAllreduceBenchOptions(c, environment_secret), "");
  return c;
}

TEST(AllreduceBenchOptions, PayloadCrcIsOnUnlessTheCommandLineSaysOff) {
  EXPECT_TRUE(deviceOptionsFor(parsed({}), "127.0.0.1").payload_crc);
  EXPECT_TRUE(deviceOptionsFor(parsed({"--payload-crc", "on"}), "127.0.0.1").payload_crc);
  EXPECT_FALSE(deviceOptionsFor(parsed({"--payload-crc", "off"}), "127.0.0.1").payload_crc);
}

TEST(AllreduceBenchOptions, TheDeviceGetsTheBackendTheAddressAndTheSecret) {
  const transport::DeviceOptions options =
      deviceOptionsFor(parsed({"--backend", "verbs", "--secret", "s3"}, "from-env"), "10.0.0.7");
  EXPECT_EQ(options.backend, "verbs");
  EXPECT_EQ(options.address, "10.0.0.7");
  EXPECT_EQ(options.secret, "s3");
  // Without --secret, POSEIDON_SECRET's.
  EXPECT_EQ(deviceOptionsFor(parsed({}, "from-env"), "10.0.0.7").secret, "from-env");
}

}  // namespace
}  // namespace poseidon::tools
