#include "tools/linkem/forwarder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "tools/linkem/sys_error.h"

namespace poseidon::linkem {
namespace {

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw sys_error(fmt::format("fcntl(O_NONBLOCK) on fd {}", fd));
}

void watch(int epoll_fd, int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) throw sys_error(fmt::format("epoll_ctl(ADD) of fd {}", fd));
}

std::optional<Clock::time_point> earliest(std::optional<Clock::time_point> a, std::optional<Clock::time_point> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

constexpr int kReadsPerWakeup = 256;  // then look at the other side and the timer again

}  // namespace

Forwarder::Forwarder(int fd_a, int fd_b, const LinkConfig& a_to_b, const LinkConfig& b_to_a, std::size_t max_packet)
    : fd_a_(fd_a), fd_b_(fd_b), a_to_b_(a_to_b), b_to_a_(b_to_a), buffer_(max_packet) {
  if (max_packet == 0) throw std::invalid_argument("max packet size 0: expected > 0");
  set_nonblocking(fd_a_);
  set_nonblocking(fd_b_);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) throw sys_error("epoll_create1");
  // steady_clock is CLOCK_MONOTONIC on Linux, so queue times can arm the timer directly.
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) {
    const auto error = sys_error("timerfd_create");
    ::close(epoll_fd_);
    throw error;
  }
  try {
    watch(epoll_fd_, fd_a_);
    watch(epoll_fd_, fd_b_);
    watch(epoll_fd_, timer_fd_);
  } catch (...) {
    ::close(timer_fd_);
    ::close(epoll_fd_);
    throw;
  }
}

Forwarder::~Forwarder() {
  ::close(timer_fd_);
  ::close(epoll_fd_);
}

void Forwarder::arm_timer(std::optional<Clock::time_point> at) {
  itimerspec spec{};
  if (at) {
    const auto ns =
        std::max<std::int64_t>(1, std::chrono::duration_cast<std::chrono::nanoseconds>(at->time_since_epoch()).count());
    spec.it_value.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  }
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) < 0) throw sys_error("timerfd_settime");
}

void Forwarder::read_all(int fd, LinkQueue& queue) {
  for (int i = 0; i < kReadsPerWakeup; ++i) {
    const ssize_t n = ::read(fd, buffer_.data(), buffer_.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      throw sys_error(fmt::format("read from packet fd {}", fd));
    }
    if (n == 0) throw std::runtime_error(fmt::format("packet fd {} reported end of file", fd));
    queue.offer(std::span<const std::byte>(buffer_.data(), static_cast<std::size_t>(n)), Clock::now());
  }
}

void Forwarder::write_due(LinkQueue& queue, int fd, std::uint64_t& write_errors, Clock::time_point now) {
  queue.release(now, [&](std::span<const std::byte> packet) {
    for (;;) {
      const ssize_t n = ::write(fd, packet.data(), packet.size());
      if (n >= 0) return;
      if (errno != EINTR) break;
    }
    // The receiving stack refused it (full backlog, malformed packet): a lost packet, as on a wire.
    ++write_errors;
  });
}

void Forwarder::run(int stop_fd, std::optional<Clock::time_point> until) {
  if (stop_fd >= 0) watch(epoll_fd_, stop_fd);
  struct Unwatch {
    int epoll_fd, fd;
    ~Unwatch() {
      if (fd >= 0) ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    }
  } unwatch{epoll_fd_, stop_fd};

  for (;;) {
    const Clock::time_point now = Clock::now();
    write_due(a_to_b_, fd_b_, stats_.write_errors_a_to_b, now);
    write_due(b_to_a_, fd_a_, stats_.write_errors_b_to_a, now);
    if (until && now >= *until) return;
    arm_timer(earliest(earliest(a_to_b_.next_release(), b_to_a_.next_release()), until));

    epoll_event events[4];
    const int n = ::epoll_wait(epoll_fd_, events, 4, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd) return;
      if (fd == fd_a_) {
        read_all(fd_a_, a_to_b_);
      } else if (fd == fd_b_) {
        read_all(fd_b_, b_to_a_);
      } else if (fd == timer_fd_) {
        std::uint64_t expirations = 0;
        [[maybe_unused]] const ssize_t r = ::read(timer_fd_, &expirations, sizeof expirations);
      }
    }
  }
}

}  // namespace poseidon::linkem
