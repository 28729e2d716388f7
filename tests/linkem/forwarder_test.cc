// The forwarding loop over AF_UNIX SOCK_SEQPACKET socket pairs, which keep packet boundaries
// as a TUN device does: no namespaces or privileges needed.

#include "tools/linkem/forwarder.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

namespace poseidon::linkem {
namespace {

using std::chrono::milliseconds;

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// host_x <-> fwd_x: what a host writes to host_x, the forwarder reads from fwd_x.
struct Wires {
  Fd host_a, fwd_a, host_b, fwd_b;
  Wires() {
    int a[2], b[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, a), 0);
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, b), 0);
    host_a.fd = a[0];
    fwd_a.fd = a[1];
    host_b.fd = b[0];
    fwd_b.fd = b[1];
  }
};

// Runs a forwarder on a thread until the test is done with it.
class Running {
 public:
  explicit Running(Forwarder& f) : stop_(::eventfd(0, EFD_CLOEXEC)) {
    thread_ = std::thread([&f, this] { f.run(stop_.fd, std::nullopt); });
  }
  ~Running() {
    const std::uint64_t one = 1;
    EXPECT_EQ(::write(stop_.fd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    thread_.join();
  }

 private:
  Fd stop_;
  std::thread thread_;
};

// Receives one packet within `timeout`; empty when none came.
std::vector<char> receive(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return {};
  std::vector<char> buf(65536);
  const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
  buf.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return buf;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

TEST(Forwarder, DelaysEachDirection) {
  Wires w;
  Forwarder f(w.fwd_a.fd, w.fwd_b.fd, LinkConfig{.delay = milliseconds(30)}, LinkConfig{.delay = milliseconds(10)},
              2048);
  Running running(f);

  const std::string hello = "hello from a";
  auto t0 = Clock::now();
  ASSERT_EQ(::send(w.host_a.fd, hello.data(), hello.size(), 0), ssize_t(hello.size()));
  auto got = receive(w.host_b.fd, milliseconds(2000));
  const double a_to_b_ms = ms_since(t0);
  EXPECT_EQ(std::string(got.begin(), got.end()), hello);
  EXPECT_GE(a_to_b_ms, 30.0);
  EXPECT_LT(a_to_b_ms, 200.0);

  const std::string reply = "reply from b";
  t0 = Clock::now();
  ASSERT_EQ(::send(w.host_b.fd, reply.data(), reply.size(), 0), ssize_t(reply.size()));
  got = receive(w.host_a.fd, milliseconds(2000));
  const double b_to_a_ms = ms_since(t0);
  EXPECT_EQ(std::string(got.begin(), got.end()), reply);
  EXPECT_GE(b_to_a_ms, 10.0);
  EXPECT_LT(b_to_a_ms, 180.0);
}

TEST(Forwarder, BurstArrivesCompleteAndInOrder) {
  Wires w;
  Forwarder f(w.fwd_a.fd, w.fwd_b.fd, LinkConfig{.delay = milliseconds(5)}, LinkConfig{}, 2048);
  constexpr std::uint32_t kCount = 100;  // well under what a socket pair buffers (~270 small)
  {
    Running running(f);
    for (std::uint32_t i = 0; i < kCount; ++i) {
      char buf[64] = {};
      std::memcpy(buf, &i, sizeof i);
      ASSERT_EQ(::send(w.host_a.fd, buf, sizeof buf, 0), ssize_t(sizeof buf)) << "packet " << i;
    }
    for (std::uint32_t i = 0; i < kCount; ++i) {
      const auto got = receive(w.host_b.fd, milliseconds(2000));
      ASSERT_EQ(got.size(), 64u) << "packet " << i;
      std::uint32_t n = 0;
      std::memcpy(&n, got.data(), sizeof n);
      ASSERT_EQ(n, i);
    }
  }  // the forwarder thread has stopped: its counters can be read
  EXPECT_EQ(f.a_to_b().stats().released, kCount);
  EXPECT_EQ(f.stats().write_errors_a_to_b, 0u);
}

TEST(Forwarder, LossDropsPackets) {
  Wires w;
  Forwarder f(w.fwd_a.fd, w.fwd_b.fd, LinkConfig{.loss = 1.0}, LinkConfig{}, 2048);
  Running running(f);
  ASSERT_EQ(::send(w.host_a.fd, "x", 1, 0), 1);
  EXPECT_TRUE(receive(w.host_b.fd, milliseconds(100)).empty());
  ASSERT_EQ(::send(w.host_b.fd, "y", 1, 0), 1);  // the other direction is lossless
  EXPECT_EQ(receive(w.host_a.fd, milliseconds(2000)).size(), 1u);
}

TEST(Forwarder, RunEndsAtTheDeadline) {
  Wires w;
  Forwarder f(w.fwd_a.fd, w.fwd_b.fd, LinkConfig{}, LinkConfig{}, 2048);
  const auto t0 = Clock::now();
  f.run(-1, t0 + milliseconds(50));
  EXPECT_GE(ms_since(t0), 50.0);
  EXPECT_LT(ms_since(t0), 1000.0);
}

TEST(Forwarder, PeerClosingIsAnError) {
  Wires w;
  Forwarder f(w.fwd_a.fd, w.fwd_b.fd, LinkConfig{}, LinkConfig{}, 2048);
  ::close(w.host_a.fd);
  w.host_a.fd = -1;
  EXPECT_THROW(f.run(-1, Clock::now() + std::chrono::seconds(5)), std::runtime_error);
}

}  // namespace
}  // namespace poseidon::linkem
