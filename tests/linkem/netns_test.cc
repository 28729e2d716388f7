// poseidon-linkem between two real network namespaces: TCP round trips see the delay, UDP sees
// the loss, and the devices go away when it stops. Needs root; skips otherwise.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process.h"
#include "tools/linkem/netns_tun.h"

namespace poseidon::linkem::test {
namespace {

using poseidon::testing::ChildProcess;
using poseidon::testing::ProcessResult;
using poseidon::testing::read_file;
using poseidon::testing::run_process;

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kDev = "plinkem";

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

sockaddr_in ipv4(const std::string& address, std::uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &sa.sin_addr);
  return sa;
}

// A socket that lives in network namespace `ns` (a socket keeps the namespace it was made in).
int socket_in(const std::string& ns, int type) {
  ScopedNetns inside(ns);
  return ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
}

bool wait_readable(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
}

// Reads exactly `len` bytes, giving up after `timeout` without data.
bool read_exactly(int fd, char* buf, std::size_t len, milliseconds timeout) {
  std::size_t got = 0;
  while (got < len) {
    if (!wait_readable(fd, timeout)) return false;
    const ssize_t n = ::read(fd, buf + got, len - got);
    if (n <= 0) return false;
    got += static_cast<std::size_t>(n);
  }
  return true;
}

class LinkemNetns : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
    if (::access("/dev/net/tun", R_OK | W_OK) != 0) GTEST_SKIP() << "/dev/net/tun is not usable";
    static int counter = 0;
    const std::string base = "plk" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
    ns_a_ = base + "a";
    ns_b_ = base + "b";
    for (const std::string& ns : {ns_a_, ns_b_}) {
      const ProcessResult r = run_process({"ip", "netns", "add", ns});
      if (r.exit_code != 0) GTEST_SKIP() << "`ip netns add " << ns << "` failed: " << r.output;
      created_.push_back(ns);
    }
    const auto tmp = std::filesystem::temp_directory_path();
    ready_file_ = (tmp / (base + ".ready")).string();
    log_file_ = (tmp / (base + ".log")).string();
  }

  void TearDown() override {
    if (linkem_) {
      linkem_->stop(SIGTERM);
      linkem_.reset();
    }
    if (HasFailure() && !log_file_.empty()) std::cerr << "poseidon-linkem log:\n" << read_file(log_file_) << "\n";
    for (const std::string& ns : created_) {
      const ProcessResult r = run_process({"ip", "netns", "del", ns});
      EXPECT_EQ(r.exit_code, 0) << "`ip netns del " << ns << "`: " << r.output;
    }
    if (!ready_file_.empty()) std::remove(ready_file_.c_str());
    if (!log_file_.empty()) std::remove(log_file_.c_str());
  }

  // Starts poseidon-linkem on subnet `net` (like "10.77.1": .1 in A, .2 in B) and waits until
  // it has written its ready file.
  void start_linkem(const std::string& net, std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        POSEIDON_LINKEM_BINARY, "--ns-a",   ns_a_,         "--ns-b",       ns_b_,      "--addr-a",
        net + ".1/24",          "--addr-b", net + ".2/24", "--ready-file", ready_file_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    linkem_ = std::make_unique<ChildProcess>(argv, log_file_);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(ready_file_)) {
      ASSERT_TRUE(linkem_->running()) << "poseidon-linkem exited with " << linkem_->exit_code() << ": "
                                      << read_file(log_file_);
      ASSERT_LT(Clock::now(), deadline) << "poseidon-linkem not ready after 10 s";
      std::this_thread::sleep_for(milliseconds(10));
    }
  }

  bool device_exists(const std::string& ns) {
    ScopedNetns inside(ns);
    return ::if_nametoindex(kDev) != 0;
  }

  std::string ns_a_, ns_b_;
  std::vector<std::string> created_;
  std::string ready_file_, log_file_;
  std::unique_ptr<ChildProcess> linkem_;
};

TEST_F(LinkemNetns, TcpRoundTripSeesTheDelayBothWays) {
  ASSERT_NO_FATAL_FAILURE(start_linkem("10.77.1", {"--delay-ms", "20"}));
  const std::uint16_t port = 7007;

  // Echo server in B.
  Fd listener(socket_in(ns_b_, SOCK_STREAM));
  ASSERT_GE(listener.fd, 0) << std::strerror(errno);
  const int one = 1;
  ::setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in server_addr = ipv4("10.77.1.2", port);
  ASSERT_EQ(::bind(listener.fd, reinterpret_cast<const sockaddr*>(&server_addr), sizeof server_addr), 0)
      << std::strerror(errno);
  ASSERT_EQ(::listen(listener.fd, 4), 0);
  std::thread server([fd = listener.fd] {
    if (!wait_readable(fd, milliseconds(10000))) return;
    Fd conn(::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC));
    if (conn.fd < 0) return;
    const int on = 1;
    ::setsockopt(conn.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    char buf[4096];
    while (wait_readable(conn.fd, milliseconds(10000))) {
      const ssize_t n = ::read(conn.fd, buf, sizeof buf);
      if (n <= 0) return;
      if (::write(conn.fd, buf, static_cast<std::size_t>(n)) != n) return;
    }
  });
  struct Join {
    std::thread& t;
    ~Join() { t.join(); }
  } join{server};

  // Client in A.
  Fd client(socket_in(ns_a_, SOCK_STREAM));
  ASSERT_GE(client.fd, 0) << std::strerror(errno);
  ::setsockopt(client.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{5, 0};
  ::setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // bounds connect()
  const auto t0 = Clock::now();
  ASSERT_EQ(::connect(client.fd, reinterpret_cast<const sockaddr*>(&server_addr), sizeof server_addr), 0)
      << std::strerror(errno);
  const double connect_ms = ms_between(t0, Clock::now());

  std::vector<double> echo_ms;
  for (int round = 0; round < 5; ++round) {
    char out[64], in[64];
    std::memset(out, 'a' + round, sizeof out);
    const auto t = Clock::now();
    ASSERT_EQ(::write(client.fd, out, sizeof out), ssize_t(sizeof out));
    ASSERT_TRUE(read_exactly(client.fd, in, sizeof in, milliseconds(5000))) << "round " << round;
    echo_ms.push_back(ms_between(t, Clock::now()));
    ASSERT_EQ(std::memcmp(in, out, sizeof in), 0);
  }
  ::shutdown(client.fd, SHUT_WR);

  std::cout << "[ linkem   ] 20 ms one-way: TCP connect " << connect_ms << " ms, echo RTT";
  for (double ms : echo_ms) std::cout << " " << ms;
  std::cout << " ms\n";
  RecordProperty("connect_ms", std::to_string(connect_ms));
  RecordProperty("echo_rtt_ms", std::to_string(echo_ms.front()));

  EXPECT_GE(connect_ms, 40.0);
  EXPECT_LT(connect_ms, 200.0);
  for (double ms : echo_ms) {
    EXPECT_GE(ms, 40.0);
    EXPECT_LT(ms, 200.0);
  }
}

TEST_F(LinkemNetns, UdpBurstSeesTheLoss) {
  ASSERT_NO_FATAL_FAILURE(start_linkem("10.77.2", {"--delay-ms", "20", "--loss", "0.2", "--seed", "7"}));
  const std::uint16_t port = 9009;
  constexpr std::uint32_t kPackets = 1000;

  Fd rx(socket_in(ns_b_, SOCK_DGRAM));
  ASSERT_GE(rx.fd, 0) << std::strerror(errno);
  const int rcvbuf = 8 << 20;  // room for the whole burst, so only the link loses packets
  ::setsockopt(rx.fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  const sockaddr_in rx_addr = ipv4("10.77.2.2", port);
  ASSERT_EQ(::bind(rx.fd, reinterpret_cast<const sockaddr*>(&rx_addr), sizeof rx_addr), 0) << std::strerror(errno);

  Fd tx(socket_in(ns_a_, SOCK_DGRAM));
  ASSERT_GE(tx.fd, 0) << std::strerror(errno);
  ASSERT_EQ(::connect(tx.fd, reinterpret_cast<const sockaddr*>(&rx_addr), sizeof rx_addr), 0) << std::strerror(errno);
  for (std::uint32_t i = 0; i < kPackets; ++i) {
    char buf[200] = {};
    std::memcpy(buf, &i, sizeof i);
    ASSERT_EQ(::send(tx.fd, buf, sizeof buf, 0), ssize_t(sizeof buf)) << "packet " << i << ": " << std::strerror(errno);
    // Paced a little, so the TUN device's transmit queue (500 packets) never overflows.
    if (i % 50 == 49) std::this_thread::sleep_for(milliseconds(1));
  }

  std::set<std::uint32_t> received;
  while (wait_readable(rx.fd, milliseconds(500))) {
    char buf[256];
    const ssize_t n = ::recv(rx.fd, buf, sizeof buf, 0);
    ASSERT_EQ(n, 200);
    std::uint32_t seq = 0;
    std::memcpy(&seq, buf, sizeof seq);
    ASSERT_LT(seq, kPackets);
    received.insert(seq);
  }
  const double lost = 1.0 - static_cast<double>(received.size()) / kPackets;
  std::cout << "[ linkem   ] --loss 0.2: " << kPackets - received.size() << " of " << kPackets << " UDP packets lost ("
            << lost * 100 << "%)\n";
  RecordProperty("udp_loss_percent", std::to_string(lost * 100));
  EXPECT_GE(lost, 0.10);
  EXPECT_LE(lost, 0.30);
}

TEST_F(LinkemNetns, StopsOnSigtermAndRemovesTheDevices) {
  ASSERT_NO_FATAL_FAILURE(start_linkem("10.77.3", {"--delay-ms", "1"}));
  EXPECT_TRUE(device_exists(ns_a_));
  EXPECT_TRUE(device_exists(ns_b_));
  EXPECT_EQ(linkem_->stop(SIGTERM), 0) << read_file(log_file_);
  EXPECT_FALSE(device_exists(ns_a_));
  EXPECT_FALSE(device_exists(ns_b_));
  EXPECT_FALSE(std::filesystem::exists(ready_file_));
}

TEST_F(LinkemNetns, DurationEndsTheRun) {
  const auto t0 = Clock::now();
  ASSERT_NO_FATAL_FAILURE(start_linkem("10.77.4", {"--duration-s", "0.3"}));
  while (linkem_->running() && Clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_FALSE(linkem_->running());
  EXPECT_EQ(linkem_->exit_code(), 0) << read_file(log_file_);
  EXPECT_GE(ms_between(t0, Clock::now()), 300.0);
  EXPECT_FALSE(device_exists(ns_a_));
}

TEST_F(LinkemNetns, ADeviceNameInUseIsReported) {
  ASSERT_NO_FATAL_FAILURE(start_linkem("10.77.5", {}));
  // A second instance on the same namespaces and device name must refuse, not take over.
  const ProcessResult r = run_process({POSEIDON_LINKEM_BINARY, "--ns-a", ns_a_, "--ns-b", ns_b_, "--addr-a",
                                       "10.77.5.1/24", "--addr-b", "10.77.5.2/24"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("already exists"), std::string::npos) << r.output;
  EXPECT_TRUE(linkem_->running());
}

}  // namespace
}  // namespace poseidon::linkem::test
