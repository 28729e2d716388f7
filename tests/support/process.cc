#include "tests/support/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/timeouts.h"

namespace poseidon::testing {
namespace {

int decode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

pid_t spawn(const std::vector<std::string>& argv, int out_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(out_fd, STDERR_FILENO);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Polls for the child's exit until `deadline`; returns true and the code when it exited.
bool wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline, int& code) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      code = decode(status);
      return true;
    }
    if (r < 0) {
      code = -1;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  char path[] = "/tmp/linkem-test-output-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return {-1, "mkstemp failed"};
  ProcessResult result;
  const pid_t pid = spawn(argv, fd);
  ::close(fd);
  if (pid > 0 && !wait_until(pid, std::chrono::steady_clock::now() + scaled(timeout), result.exit_code)) {
    ::kill(pid, SIGKILL);
    wait_until(pid, std::chrono::steady_clock::time_point::max(), result.exit_code);
  }
  result.output = read_file(path);
  std::remove(path);
  return result;
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  pid_ = spawn(argv, fd);
  ::close(fd);
}

ChildProcess::~ChildProcess() { stop(SIGKILL); }

bool ChildProcess::running() {
  if (pid_ <= 0) return false;
  int code = 0;
  if (!wait_until(pid_, std::chrono::steady_clock::now(), code)) return true;
  exit_code_ = code;
  pid_ = -1;
  return false;
}

int ChildProcess::stop(int signal, std::chrono::milliseconds timeout) {
  if (!running()) return exit_code_;
  ::kill(pid_, signal);
  if (!wait_until(pid_, std::chrono::steady_clock::now() + scaled(timeout), exit_code_)) {
    ::kill(pid_, SIGKILL);
    wait_until(pid_, std::chrono::steady_clock::time_point::max(), exit_code_);
  }
  pid_ = -1;
  return exit_code_;
}

uint16_t free_loopback_port() {
  // Below the kernel's ephemeral range (32768 and up by default), from which every port-0 bind and
  // outgoing connection of the tests running beside this one draws: a port found free here is not
  // handed to another test while its job starts (a port-0 bind's port could be, and was).
  static std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(pick(random)));
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    if (bound) return ntohs(address.sin_port);
  }
  return 0;
}

}  // namespace poseidon::testing
