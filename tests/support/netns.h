// Test support: two network namespaces joined by a veth pair — two hosts with real network
// stacks on one machine. Made for one test, removed by the destructor (also when it fails).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::testing {

// Runs a set-up command (ip, tc, sysctl) to completion; an error quoting it and its output if it
// fails.
Status runCommand(const std::vector<std::string>& argv);

// Why namespaces cannot be made here (not root, no `ip`), or nullopt when they can.
std::optional<std::string> netnsUnavailableReason();

class NetnsPair {
 public:
  // Namespaces "<prefix><pid>a" and "...b" with addresses <subnet>.1/24 and <subnet>.2/24.
  static Result<std::unique_ptr<NetnsPair>> create(const std::string& prefix, const std::string& subnet);
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  const std::string& nsA() const { return ns_a_; }
  const std::string& nsB() const { return ns_b_; }
  const std::string& addrA() const { return addr_a_; }
  const std::string& addrB() const { return addr_b_; }
  // Rate-limits both directions with a tbf qdisc, e.g. "1gbit".
  Status limitRate(const std::string& rate);

 private:
  NetnsPair() = default;
  std::string ns_a_, ns_b_, addr_a_, addr_b_;
};

}  // namespace poseidon::testing
