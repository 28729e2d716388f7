// Two hosts: ranks in two network namespaces joined by a veth pair, talking over real TCP/IP
// stacks (plain and rate-limited by tc). Needs root; skips, saying why, otherwise.
#include <gtest/gtest.h>

#include "tests/support/mesh.h"
#include "tests/support/netns.h"
#include "tests/support/process.h"

namespace poseidon::transport {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::NetnsPair;
using poseidon::testing::TempDir;

struct NetnsCase {
  int streams;
  std::string rate;  // empty: no limit
};

void PrintTo(const NetnsCase& c, std::ostream* os) { *os << c.streams << " streams " << c.rate; }

class TwoHosts : public ::testing::TestWithParam<NetnsCase> {};

TEST_P(TwoHosts, ExchangeEveryByteIntact) {
  if (auto why = poseidon::testing::netnsUnavailableReason()) GTEST_SKIP() << *why;
  auto hosts = NetnsPair::create("ptn", "10.78.0");
  ASSERT_TRUE(hosts.isOk()) << hosts.status().toString();
  if (!GetParam().rate.empty()) {
    ASSERT_TRUE((*hosts)->limitRate(GetParam().rate).isOk());
  }
  TempDir dir;
  auto args = [&](const std::string& ns, const std::string& address, int rank) {
    return std::vector<std::string>{"ip",
                                    "netns",
                                    "exec",
                                    ns,
                                    TRANSPORT_PEER_BINARY,
                                    "--store",
                                    dir.path(),
                                    "--rank",
                                    std::to_string(rank),
                                    "--size",
                                    "2",
                                    "--role",
                                    "exchange",
                                    "--address",
                                    address,
                                    "--streams",
                                    std::to_string(GetParam().streams)};
  };
  ChildProcess a(args((*hosts)->nsA(), (*hosts)->addrA(), 0), dir.path() + "/a.log");
  ChildProcess b(args((*hosts)->nsB(), (*hosts)->addrB(), 1), dir.path() + "/b.log");
  EXPECT_EQ(a.stop(0, std::chrono::seconds(120)), 0) << poseidon::testing::read_file(dir.path() + "/a.log");
  EXPECT_EQ(b.stop(0, std::chrono::seconds(120)), 0) << poseidon::testing::read_file(dir.path() + "/b.log");
}

INSTANTIATE_TEST_SUITE_P(Links, TwoHosts, ::testing::Values(NetnsCase{1, ""}, NetnsCase{4, ""}, NetnsCase{2, "1gbit"}),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.streams) + "streams" +
                                  (param_info.param.rate.empty() ? "" : "_" + param_info.param.rate);
                         });

}  // namespace
}  // namespace poseidon::transport
