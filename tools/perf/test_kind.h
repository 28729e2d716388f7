// The four perftest tests poseidon-perf runs, their names and perftest's defaults for each.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace poseidon::perf {

enum class TestKind { kSendBw, kWriteBw, kSendLat, kWriteLat };

inline constexpr std::string_view kTestNames = "send_bw, write_bw, send_lat, write_lat";

// "write_bw" and so on.
const char* testName(TestKind test);
std::optional<TestKind> parseTestName(std::string_view name);

inline bool isBandwidth(TestKind test) { return test == TestKind::kSendBw || test == TestKind::kWriteBw; }
inline bool usesWrite(TestKind test) { return test == TestKind::kWriteBw || test == TestKind::kWriteLat; }

// perftest's title line: "RDMA_Write BW Test", "Send Latency Test".
const char* testTitle(TestKind test);

// perftest's defaults: DEF_SIZE_BW / DEF_SIZE_LAT, DEF_ITERS_WB (write_bw) / DEF_ITERS, and a
// tx depth of DEF_TX_BW for bandwidth (latency tests ping-pong one message at a time).
uint64_t defaultSize(TestKind test);
uint64_t defaultIterations(TestKind test);
int defaultTxDepth(TestKind test);

}  // namespace poseidon::perf
