#include "tests/support/netns.h"

#include <unistd.h>

#include "tests/support/process.h"

namespace poseidon::testing {

Status runCommand(const std::vector<std::string>& argv) {
  const ProcessResult r = run_process(argv);
  if (r.exit_code != 0) {
    std::string joined;
    for (const auto& a : argv) joined += a + " ";
    return makeStatus(StatusCode::kIoError, "`{}` failed ({}): {}", joined, r.exit_code, r.output);
  }
  return Status::ok();
}

namespace {
Status ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return runCommand(argv);
}
}  // namespace

std::optional<std::string> netnsUnavailableReason() {
  if (::geteuid() != 0) return "network namespaces need root";
  const ProcessResult r = run_process({"ip", "netns", "list"});
  if (r.exit_code != 0) return "`ip netns` does not work here: " + r.output;
  return std::nullopt;
}

Result<std::unique_ptr<NetnsPair>> NetnsPair::create(const std::string& prefix, const std::string& subnet) {
  std::unique_ptr<NetnsPair> pair(new NetnsPair());
  const std::string base = prefix + std::to_string(::getpid());
  pair->ns_a_ = base + "a";
  pair->ns_b_ = base + "b";
  pair->addr_a_ = subnet + ".1";
  pair->addr_b_ = subnet + ".2";
  const std::string veth_a = "v" + base + "a";
  const std::string veth_b = "v" + base + "b";
  for (const auto& step : std::vector<std::vector<std::string>>{
           {"netns", "add", pair->ns_a_},
           {"netns", "add", pair->ns_b_},
           {"link", "add", veth_a, "type", "veth", "peer", "name", veth_b},
           {"link", "set", veth_a, "netns", pair->ns_a_},
           {"link", "set", veth_b, "netns", pair->ns_b_},
           {"-n", pair->ns_a_, "addr", "add", pair->addr_a_ + "/24", "dev", veth_a},
           {"-n", pair->ns_b_, "addr", "add", pair->addr_b_ + "/24", "dev", veth_b},
           {"-n", pair->ns_a_, "link", "set", veth_a, "up"},
           {"-n", pair->ns_b_, "link", "set", veth_b, "up"},
           {"-n", pair->ns_a_, "link", "set", "lo", "up"},
           {"-n", pair->ns_b_, "link", "set", "lo", "up"},
       }) {
    Status st = ip(step);
    if (!st.isOk()) return st;  // the destructor removes what was made
  }
  return pair;
}

Status NetnsPair::limitRate(const std::string& rate) {
  for (const auto& [ns, side] : {std::pair{ns_a_, "a"}, std::pair{ns_b_, "b"}}) {
    const std::string dev = "v" + ns.substr(0, ns.size() - 1) + side;
    POSEIDON_RETURN_IF_ERROR(ip({"netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                                 "burst", "256kb", "latency", "50ms"}));
  }
  return Status::ok();
}

NetnsPair::~NetnsPair() {
  // Deleting a namespace destroys its end of the veth pair, and with it the other end.
  for (const auto& ns : {ns_a_, ns_b_}) {
    if (!ns.empty()) run_process({"ip", "netns", "del", ns});
  }
}

}  // namespace poseidon::testing
