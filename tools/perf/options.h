// The command line of poseidon-perf: perftest's options (ib_write_bw and friends) parsed with
// CLI11, every value checked, defaults that depend on the test filled in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tools/perf/test_kind.h"

namespace poseidon::perf {

inline constexpr uint16_t kDefaultPort = 18515;  // perftest's DEF_PORT
// How long a latency test's waits spin before sleeping: perftest polls its completion queue,
// and a wake-up across cores costs tens of microseconds. Bandwidth tests keep the transport's
// short spin, since spinning takes the cores the progress engines copy on.
inline constexpr int kLatencySpinMicros = 1000;
inline constexpr int kMaxSpinMicros = 1'000'000;
// ah_attr.grh.sgid_index is 8 bits wide.
inline constexpr int kMaxGidIndex = 255;

struct Options {
  TestKind test = TestKind::kWriteBw;
  std::string host;  // empty: server mode
  uint64_t size = 0;
  bool all_sizes = false;
  uint64_t iterations = 0;
  int duration_s = 0;  // 0: run a number of iterations instead
  int margin_s = -1;   // -1: a quarter of the duration, as perftest
  int streams = 1;
  uint16_t port = kDefaultPort;
  std::string transport = "tcp";
  int tx_depth = 0;
  int rx_depth = 512;
  int cq_mod = 100;
  bool report_gbits = false;
  std::string out_json;
  std::string secret;  // --secret, else the POSEIDON_SECRET environment variable
  std::string bind;    // empty: see rendezvous.h for the default
  bool busy_poll = false;
  std::string progress = "waiters";  // --progress: "waiters" (DeviceOptions::waiters_drive) or "engine"
  std::string payload_crc = "on";    // --payload-crc: DeviceOptions::payload_crc, "on" or "off"
  std::string encrypt = "off";       // --encrypt: DeviceOptions::encrypt_frames, "on" or "off"
  int spin_us = -1;                  // -1: kLatencySpinMicros for latency tests, the transport's default for bandwidth
  int timeout_s = 60;
  // -x: the source GID index of this side's queue pairs (verbs); -1 lets rdma_cm pick. Each side
  // sets its own, as in perftest: GID tables differ between hosts.
  int gid_index = -1;

  // Which options were given on the command line; a server notes where the client differs.
  bool test_given = false;
  bool size_given = false;
  bool iterations_given = false;
  bool streams_given = false;
  bool transport_given = false;
  bool tx_depth_given = false;

  bool isServer() const { return host.empty(); }
  // The spin of every wait for `test`, in nanoseconds; -1 keeps the transport's default.
  int64_t spinNanos(TestKind run_test) const;
};

// Either options to run with, or the code to exit with at once (0 after --help, 2 after a bad
// command line) and the text to print (help to stdout, an error naming the option, the value
// and what was expected to stderr).
struct ParsedOptions {
  std::optional<Options> options;
  int exit_code = 0;
  std::string message;
};

// `environment_secret` is POSEIDON_SECRET (nullptr when unset); passed in so tests control it.
ParsedOptions parseOptions(int argc, const char* const* argv, const char* environment_secret);

// "65536", "64K", "1M", "2G" (binary multiples) -> bytes; nothing for anything else.
std::optional<uint64_t> parseByteSize(std::string_view text);

}  // namespace poseidon::perf
