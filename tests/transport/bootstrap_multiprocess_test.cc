// Bootstrap across real processes: each rank is a forked child that reads its own environment,
// as under mpirun or srun, opens the store and meets the others at a barrier.
//
// Children are forked while the test process has no other threads, do their part and _exit()
// with a code the parent checks; what went wrong is printed to stderr.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "transport/bootstrap/launch_env.h"
#include "transport/bootstrap/open_store.h"
#include "transport/bootstrap/store.h"
#include "transport/bootstrap/tcp_store_server.h"

namespace poseidon::transport::bootstrap {
namespace {

using namespace std::chrono_literals;
using Env = std::map<std::string, std::string>;

constexpr int kRanks = 4;

// Exit codes of a child, so the parent's failure says which step broke.
enum ChildExit { kPassed = 0, kDetectFailed = 10, kOpenFailed, kStoreFailed, kBarrierFailed, kWrongOutcome };

int fail(int code, int rank, const Status& status) {
  std::fprintf(stderr, "rank %d: %s\n", rank, status.toString().c_str());
  return code;
}

// Forks one child per environment; returns their exit codes (-signal when killed). Children
// still running at the deadline are killed, so a hang fails the test instead of stalling it.
std::vector<int> runChildren(const std::vector<Env>& envs, const std::function<int()>& body,
                             std::chrono::seconds limit = 8s) {
  std::vector<pid_t> pids;
  std::fflush(nullptr);  // or each child would print the parent's buffered output again
  for (const Env& env : envs) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
      const int code = body();
      std::fflush(nullptr);
      ::_exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes(pids.size(), -1);
  const Deadline deadline = Deadline::after(limit);
  for (size_t i = 0; i < pids.size(); ++i) {
    int status = 0;
    while (::waitpid(pids[i], &status, WNOHANG) == 0) {
      if (deadline.expired()) {
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], &status, 0);
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }
  return codes;
}

uint16_t unusedPort() {
  Result<std::unique_ptr<TcpStoreServer>> server = TcpStoreServer::start("127.0.0.1", 0);
  return server ? (*server)->port() : 0;  // destroyed at once: no thread survives into fork()
}

// What every rank does: find itself, publish, read every peer, and wait for all.
int rendezvous() {
  Result<LaunchInfo> info = detectLaunch();
  if (!info) return fail(kDetectFailed, -1, info.status());
  const int rank = info->rank;
  if (rank == 0) std::this_thread::sleep_for(200ms);  // the root comes last; the others retry
  Result<std::unique_ptr<Store>> store = openStore(*info, Deadline::after(5s), "");
  if (!store) return fail(kOpenFailed, rank, store.status());
  Status set = setString(**store, "pid/" + std::to_string(rank), std::to_string(::getpid()));
  if (!set.isOk()) return fail(kStoreFailed, rank, set);
  for (int peer = 0; peer < info->size; ++peer) {
    Result<std::string> pid = getString(**store, "pid/" + std::to_string(peer), Deadline::after(5s));
    if (!pid) return fail(kStoreFailed, rank, pid.status());
  }
  Status done = barrier(**store, "done", info->size, Deadline::after(5s));
  if (!done.isOk()) return fail(kBarrierFailed, rank, done);
  return kPassed;
}

TEST(BootstrapMultiprocess, PlainVariablesAndTcpStore) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  std::vector<Env> envs;
  for (int r = 0; r < kRanks; ++r) {
    envs.push_back({{"POSEIDON_RANK", std::to_string(r)},
                    {"POSEIDON_SIZE", std::to_string(kRanks)},
                    {"POSEIDON_ROOT", "127.0.0.1:" + std::to_string(port)}});
  }
  EXPECT_EQ(runChildren(envs, rendezvous), std::vector<int>(kRanks, kPassed));
}

TEST(BootstrapMultiprocess, OpenMpiVariablesAndSharedDirectory) {
  char templ[] = "/tmp/poseidon_bootstrap_mp_XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string dir = templ;
  std::vector<Env> envs;
  for (int r = 0; r < kRanks; ++r) {
    envs.push_back({{"OMPI_COMM_WORLD_RANK", std::to_string(r)},
                    {"OMPI_COMM_WORLD_SIZE", std::to_string(kRanks)},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(r)},
                    {"POSEIDON_STORE_DIR", dir}});
  }
  EXPECT_EQ(runChildren(envs, rendezvous), std::vector<int>(kRanks, kPassed));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TEST(BootstrapMultiprocess, RootKilledWhileOthersWaitGivesConnectionError) {
  const uint16_t port = unusedPort();
  ASSERT_NE(port, 0);
  std::vector<Env> envs;
  for (int r = 0; r < 3; ++r) {
    envs.push_back({{"SLURM_PROCID", std::to_string(r)},
                    {"SLURM_NTASKS", "3"},
                    {"POSEIDON_ROOT", "127.0.0.1:" + std::to_string(port)}});
  }
  const auto body = []() -> int {
    Result<LaunchInfo> info = detectLaunch();
    if (!info) return fail(kDetectFailed, -1, info.status());
    Result<std::unique_ptr<Store>> store = openStore(*info, Deadline::after(5s), "");
    if (!store) return fail(kOpenFailed, info->rank, store.status());
    if (info->rank == 0) {
      // Wait until both others are parked in get(), then die without any clean-up.
      Result<int64_t> waiting = (*store)->add("waiting", 0);
      while (waiting && *waiting < 2) {
        std::this_thread::sleep_for(10ms);
        waiting = (*store)->add("waiting", 0);
      }
      std::this_thread::sleep_for(100ms);
      ::raise(SIGKILL);
    }
    if (!(*store)->add("waiting", 1)) return kStoreFailed;
    const auto start = Clock::now();
    Result<std::vector<uint8_t>> never = (*store)->get("never", Deadline::after(5s));
    const auto waited = Clock::now() - start;
    if (never || never.status().code() != StatusCode::kConnectionError || waited > 3s) {
      std::fprintf(stderr, "rank %d: expected a prompt ConnectionError, got %s\n", info->rank,
                   never ? "a value" : never.status().toString().c_str());
      return kWrongOutcome;
    }
    return kPassed;
  };
  EXPECT_EQ(runChildren(envs, body), (std::vector<int>{-SIGKILL, kPassed, kPassed}));
}

}  // namespace
}  // namespace poseidon::transport::bootstrap
