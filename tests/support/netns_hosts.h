// Test support: hosts as network namespaces, each with its own link, for tests that change one
// host's link (rate, down and up) or put every link behind poseidon-linkem (delay, jitter, loss).
// The C++ twin of tools/netns-hosts.sh. Made for one test, removed by the destructor.
//
//   bridge:  host i (namespace <prefix><pid>h<i>, address <subnet>.<i+1>) -- veth, tc tbf both
//            ways -- a bridge in namespace <prefix><pid>br.
//   linkem:  host i (address <subnet>.<i>.2) -- a poseidon-linkem TUN link, delay, jitter, loss and
//            rate in both directions -- a router namespace <prefix><pid>rt (<subnet>.<i>.1).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/support/netns.h"
#include "tests/support/process.h"

namespace poseidon::testing {

struct LinkemSpec {
  std::string binary;  // poseidon-linkem
  int delay_ms = 0;    // one way, per hop (host to host: two hops)
  int jitter_ms = 0;   // per packet, uniform +-; packets then reorder
  double loss = 0;     // per packet, per hop
  double rate_mbit = 0;
  int seed = 1;
};

class NetnsHosts {
 public:
  // `prefix`: at most 4 characters (names carry the pid and must fit 15). `rate`: tc's, e.g.
  // "100mbit", for every host's link.
  static Result<std::unique_ptr<NetnsHosts>> bridge(const std::string& prefix, const std::string& subnet, int count,
                                                    const std::string& rate);
  static Result<std::unique_ptr<NetnsHosts>> behindLinkem(const std::string& prefix, const std::string& subnet,
                                                          int count, const LinkemSpec& link);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  int count() const { return static_cast<int>(namespaces_.size()); }
  const std::string& ns(int host) const { return namespaces_[static_cast<size_t>(host)]; }
  const std::string& address(int host) const { return addresses_[static_cast<size_t>(host)]; }
  // Words that run a command in the host's namespace: {"ip", "netns", "exec", ns}.
  std::vector<std::string> exec(int host) const { return {"ip", "netns", "exec", ns(host)}; }

  // Bridge hosts: re-limits the host's link both ways.
  Status limit(int host, const std::string& rate);
  // Bridge hosts: takes the host's link down (both ends: nothing passes, nothing is refused) and
  // up again.
  Status setLinkUp(int host, bool up);

 private:
  NetnsHosts() = default;
  std::string base_;  // <prefix><pid>
  std::string hub_;   // the bridge's or router's namespace
  std::vector<std::string> namespaces_, addresses_;
  std::vector<std::unique_ptr<ChildProcess>> linkems_;
  std::string ready_dir_;
};

}  // namespace poseidon::testing
