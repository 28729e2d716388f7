#include "tools/perf/test_kind.h"

namespace poseidon::perf {

const char* testName(TestKind test) {
  switch (test) {
    case TestKind::kSendBw: return "send_bw";
    case TestKind::kWriteBw: return "write_bw";
    case TestKind::kSendLat: return "send_lat";
    case TestKind::kWriteLat: return "write_lat";
  }
  return "?";
}

std::optional<TestKind> parseTestName(std::string_view name) {
  for (TestKind test : {TestKind::kSendBw, TestKind::kWriteBw, TestKind::kSendLat, TestKind::kWriteLat}) {
    if (name == testName(test)) return test;
  }
  return std::nullopt;
}

const char* testTitle(TestKind test) {
  switch (test) {
    case TestKind::kSendBw: return "Send BW Test";
    case TestKind::kWriteBw: return "RDMA_Write BW Test";
    case TestKind::kSendLat: return "Send Latency Test";
    case TestKind::kWriteLat: return "RDMA_Write Latency Test";
  }
  return "?";
}

uint64_t defaultSize(TestKind test) { return isBandwidth(test) ? 65536 : 2; }

uint64_t defaultIterations(TestKind test) { return test == TestKind::kWriteBw ? 5000 : 1000; }

int defaultTxDepth(TestKind test) { return isBandwidth(test) ? 128 : 1; }

}  // namespace poseidon::perf
