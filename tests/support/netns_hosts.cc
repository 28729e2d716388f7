#include "tests/support/netns_hosts.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <thread>

namespace poseidon::testing {
namespace {

Status runAll(const std::vector<std::vector<std::string>>& steps) {
  for (const auto& step : steps) POSEIDON_RETURN_IF_ERROR(runCommand(step));
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<NetnsHosts>> NetnsHosts::bridge(const std::string& prefix, const std::string& subnet, int count,
                                                       const std::string& rate) {
  std::unique_ptr<NetnsHosts> hosts(new NetnsHosts());
  hosts->base_ = prefix + std::to_string(::getpid());
  hosts->hub_ = hosts->base_ + "br";
  POSEIDON_RETURN_IF_ERROR(runAll({{"ip", "netns", "add", hosts->hub_},
                                   {"ip", "-n", hosts->hub_, "link", "add", "br0", "type", "bridge"},
                                   {"ip", "-n", hosts->hub_, "link", "set", "br0", "up"}}));
  for (int i = 0; i < count; ++i) {
    const std::string ns = hosts->base_ + "h" + std::to_string(i);
    const std::string host_end = ns;  // the veth end in the host is named like its namespace
    const std::string bridge_end = hosts->base_ + "b" + std::to_string(i);
    const std::string address = subnet + "." + std::to_string(i + 1);
    POSEIDON_RETURN_IF_ERROR(runCommand({"ip", "netns", "add", ns}));
    hosts->namespaces_.push_back(ns);
    hosts->addresses_.push_back(address);
    // Made inside the namespaces, so deleting them removes it whatever step fails after.
    POSEIDON_RETURN_IF_ERROR(runAll(
        {{"ip", "-n", ns, "link", "add", host_end, "type", "veth", "peer", "name", bridge_end, "netns", hosts->hub_},
         {"ip", "-n", ns, "addr", "add", address + "/24", "dev", host_end},
         {"ip", "-n", ns, "link", "set", "lo", "up"},
         {"ip", "-n", ns, "link", "set", host_end, "up"},
         {"ip", "-n", hosts->hub_, "link", "set", bridge_end, "master", "br0"},
         {"ip", "-n", hosts->hub_, "link", "set", bridge_end, "up"}}));
    POSEIDON_RETURN_IF_ERROR(hosts->limit(i, rate));
  }
  return hosts;
}

Result<std::unique_ptr<NetnsHosts>> NetnsHosts::behindLinkem(const std::string& prefix, const std::string& subnet,
                                                             int count, const LinkemSpec& link) {
  std::unique_ptr<NetnsHosts> hosts(new NetnsHosts());
  hosts->base_ = prefix + std::to_string(::getpid());
  hosts->hub_ = hosts->base_ + "rt";
  char ready_template[] = "/tmp/netns-hosts-ready-XXXXXX";
  if (::mkdtemp(ready_template) == nullptr) return errnoStatus(StatusCode::kIoError, "mkdtemp");
  hosts->ready_dir_ = ready_template;
  POSEIDON_RETURN_IF_ERROR(runAll({{"ip", "netns", "add", hosts->hub_},
                                   {"ip", "-n", hosts->hub_, "link", "set", "lo", "up"},
                                   {"ip", "netns", "exec", hosts->hub_, "sysctl", "-qw", "net.ipv4.ip_forward=1"}}));
  for (int i = 0; i < count; ++i) {
    const std::string ns = hosts->base_ + "h" + std::to_string(i);
    const std::string net = subnet + "." + std::to_string(i);
    POSEIDON_RETURN_IF_ERROR(runCommand({"ip", "netns", "add", ns}));
    hosts->namespaces_.push_back(ns);
    hosts->addresses_.push_back(net + ".2");
    POSEIDON_RETURN_IF_ERROR(runCommand({"ip", "-n", ns, "link", "set", "lo", "up"}));
    const std::string ready = hosts->ready_dir_ + "/" + std::to_string(i);
    hosts->linkems_.push_back(
        std::make_unique<ChildProcess>(std::vector<std::string>{link.binary,
                                                                "--ns-a",
                                                                ns,
                                                                "--ns-b",
                                                                hosts->hub_,
                                                                "--addr-a",
                                                                net + ".2/24",
                                                                "--addr-b",
                                                                net + ".1/24",
                                                                "--dev-name",
                                                                hosts->base_ + "l" + std::to_string(i),
                                                                "--delay-ms",
                                                                std::to_string(link.delay_ms),
                                                                "--jitter-ms",
                                                                std::to_string(link.jitter_ms),
                                                                "--loss",
                                                                std::to_string(link.loss),
                                                                "--rate-mbit",
                                                                std::to_string(link.rate_mbit),
                                                                "--seed",
                                                                std::to_string(link.seed + i),
                                                                "--ready-file",
                                                                ready},
                                       hosts->ready_dir_ + "/log-" + std::to_string(i)));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(ready)) {
      if (!hosts->linkems_.back()->running() || std::chrono::steady_clock::now() > until) {
        return makeStatus(StatusCode::kIoError, "poseidon-linkem for host {} did not come up: {}", i,
                          read_file(hosts->ready_dir_ + "/log-" + std::to_string(i)));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    POSEIDON_RETURN_IF_ERROR(runCommand({"ip", "-n", ns, "route", "add", subnet + ".0.0/16", "via", net + ".1"}));
  }
  return hosts;
}

Status NetnsHosts::limit(int host, const std::string& rate) {
  // The bucket: one timer tick (10 ms: HZ may be 100) of traffic, at least 16 KiB, so tbf can
  // reach the rate but a burst does not hide it (a fixed 1 MB is a second at 8 Mbit/s).
  const std::regex form("([0-9]+)(kbit|mbit|gbit)");
  std::smatch m;
  if (!std::regex_match(rate, m, form)) {
    return makeStatus(StatusCode::kInvalidArgument, "rate '{}': expected <n>kbit, mbit or gbit", rate);
  }
  const double unit = m[2] == "kbit" ? 1e3 : m[2] == "mbit" ? 1e6 : 1e9;
  const auto burst = std::max<uint64_t>(16384, static_cast<uint64_t>(std::stod(m[1]) * unit / 8 / 100));
  const std::string host_end = ns(host), bridge_end = base_ + "b" + std::to_string(host);
  for (const auto& [where, dev] : {std::pair{ns(host), host_end}, std::pair{hub_, bridge_end}}) {
    POSEIDON_RETURN_IF_ERROR(runCommand({"ip", "netns", "exec", where, "tc", "qdisc", "replace", "dev", dev, "root",
                                         "tbf", "rate", rate, "burst", std::to_string(burst), "latency", "50ms"}));
  }
  return Status::ok();
}

Status NetnsHosts::setLinkUp(int host, bool up) {
  const char* state = up ? "up" : "down";
  return runAll({{"ip", "-n", ns(host), "link", "set", ns(host), state},
                 {"ip", "-n", hub_, "link", "set", base_ + "b" + std::to_string(host), state}});
}

NetnsHosts::~NetnsHosts() {
  // A namespace outlives `ip netns del` while a process holds it: stop the links first.
  for (auto& linkem : linkems_) linkem->stop(SIGTERM);
  for (const auto& ns : namespaces_) {
    const ProcessResult pids = run_process({"ip", "netns", "pids", ns});
    std::istringstream in(pids.output);
    for (pid_t pid; in >> pid;) ::kill(pid, SIGKILL);
  }
  for (const auto& ns : namespaces_) run_process({"ip", "netns", "del", ns});
  if (!hub_.empty()) run_process({"ip", "netns", "del", hub_});
  if (!ready_dir_.empty()) std::filesystem::remove_all(ready_dir_);
}

}  // namespace poseidon::testing
