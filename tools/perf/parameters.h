// RunParameters: what both sides of a run must agree on. The client derives them from its
// command line and publishes them through the store; the server adopts them (perftest style:
// the user sets options on the client only), checking every field as it would a command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/perf/test_kind.h"

namespace poseidon::perf {

// Limits, as perftest's MIN_ITER/MAX_ITER, MAX_TX, MAX_RX, MAX_CQ_MOD; streams as DeviceOptions.
inline constexpr uint64_t kMinIterations = 5;
inline constexpr uint64_t kMaxIterations = 100'000'000;
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;
inline constexpr uint64_t kAllSizesMax = uint64_t{1} << 23;  // -a: 2 .. 2^23, as perftest
inline constexpr int kMaxDurationSeconds = 86'400;
// duration_s and margin_s against the nanosecond clock of the passes.
inline constexpr int64_t kNanosPerSecond = 1'000'000'000;
inline constexpr int kMaxStreams = 64;
inline constexpr int kMaxTxDepth = 15'000;
inline constexpr int kMaxRxDepth = 16'384;
inline constexpr int kMaxCqMod = 1024;
inline constexpr int kMaxTimeoutSeconds = 86'400;
inline constexpr int kParametersVersion = 4;  // 4: encrypt_frames

struct RunParameters {
  TestKind test = TestKind::kWriteBw;
  std::string transport = "tcp";
  std::vector<uint64_t> sizes;
  uint64_t iterations = 0;  // iteration mode (duration_s == 0)
  int duration_s = 0;
  int margin_s = 0;
  int streams = 1;
  int tx_depth = 128;
  int rx_depth = 512;
  int cq_mod = 100;
  bool report_gbits = false;
  bool busy_poll = false;
  bool waiters_drive = true;    // --progress: both sides drive the same way
  bool payload_crc = true;      // --payload-crc: both sides check the same way
  bool encrypt_frames = false;  // --encrypt: both sides seal, or neither
  // The numeric address the client reached the server's store at; the server's data device
  // listens there unless it was given --bind.
  std::string server_address;

  bool durationMode() const { return duration_s > 0; }
  uint64_t maxSize() const;
};

// "" when every field is in range, else a message naming the option, the value and what was
// expected: "-n/--iters 3: expected a number of iterations from 5 to 100000000".
std::string checkParameters(const RunParameters& p);

// -a: 2, 4, ..., 2^23.
std::vector<uint64_t> allSizes();

std::string parametersToJson(const RunParameters& p);
// Parses and checks what a client sent; the message says what is wrong with it.
Result<RunParameters> parametersFromJson(const std::string& text);

}  // namespace poseidon::perf
