// A PS job of ps_peer processes for the multi-process and network-namespace tests.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace poseidon::testing {

struct JobSpec {
  int workers = 2;
  int servers = 2;
  uint64_t clocks = 40;
  std::string consistency = "bsp";
  std::string optimizer = "adam:lr=0.01";
  std::string checkpoint_dir;
  uint64_t checkpoint_every = 0;
  int checkpoint_keep = 2;  // the server's default
  bool resume = false;
  int clock_delay_ms = 0;
  int die_worker = -1;
  int die_at_clock = -1;
  bool trace = false;  // workers write <dir>/trace-<tag>-<rank>
  std::string backend = "tcp";
  // "host:port": rank 0 serves a TCP store there (so killing it kills the store); empty: a
  // FileStore in the job's directory.
  std::string root;
  // Per rank: words before the command (e.g. "ip netns exec ns1") and the address to listen on.
  std::function<std::vector<std::string>(int rank)> prefix;
  std::function<std::string(int rank)> address;
  // Per rank: changes to the finished command line (a test starting one rank differently).
  std::function<void(int rank, std::vector<std::string>& argv)> edit_argv;
};

// Sets the value after `option` in `argv` (appends both when absent).
void setOption(std::vector<std::string>& argv, const std::string& option, const std::string& value);

// Starts every rank as a ps_peer process (`peer_binary`); logs and outputs go into `dir`:
// log-<tag>-<rank>, params-<tag>-<worker>.
std::vector<std::unique_ptr<ChildProcess>> launchJob(const std::string& peer_binary, const JobSpec& job,
                                                     const std::string& dir, const std::string& tag);

// Waits for a process to exit by itself, up to `timeout`; its exit code, or -1 if still running.
int waitExit(ChildProcess& process, std::chrono::milliseconds timeout);

std::vector<float> readParams(const std::string& path);
bool sameBits(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace poseidon::testing
