#pragma once
// Child processes for tests: run a command to completion, or keep one running.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace poseidon::testing {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or 128 + signal when killed, -1 when it did not start
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] looked up in PATH) and waits for it; kills it after `timeout` (stretched by
// timeout_scale() in a sanitizer build).
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A process left running, its stdout and stderr going to `log_path`. The destructor stops it.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();  // false once it has exited (then exit_code() is valid)
  int exit_code() const { return exit_code_; }
  // Sends `signal`, waits up to `timeout` (stretched as run_process's), then SIGKILL. Returns the
  // exit code as above.
  int stop(int signal, std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

std::string read_file(const std::string& path);

// A TCP port on 127.0.0.1 that nobody listens on now (bound and released), picked at random below
// the kernel's ephemeral range so that other tests' port-0 binds never take it; another process
// may still pick the same one by chance (1 in 12000); 0 when none was had.
uint16_t free_loopback_port();

}  // namespace poseidon::testing
