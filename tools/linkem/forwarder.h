#pragma once
// Moves packets between two packet file descriptors (TUN devices, or datagram sockets in tests)
// through one LinkQueue per direction. Single thread: epoll on both fds, a timerfd for the next
// release, and an optional stop fd.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "tools/linkem/link_queue.h"

namespace poseidon::linkem {

struct ForwarderStats {
  std::uint64_t write_errors_a_to_b = 0;  // packets the B side refused (counted, then dropped)
  std::uint64_t write_errors_b_to_a = 0;
};

class Forwarder {
 public:
  // fd_a and fd_b are not owned; they are switched to non-blocking. A packet read from fd_a goes
  // through `a_to_b` and is written to fd_b, and the other way round. `max_packet` bounds a read.
  // Throws std::system_error when the epoll or timer set-up fails, std::invalid_argument for a
  // bad LinkConfig.
  Forwarder(int fd_a, int fd_b, const LinkConfig& a_to_b, const LinkConfig& b_to_a, std::size_t max_packet);
  ~Forwarder();
  Forwarder(const Forwarder&) = delete;
  Forwarder& operator=(const Forwarder&) = delete;

  // Forwards until `stop_fd` is readable (-1: no stop fd) or `until` has passed; packets still
  // held then are dropped. Throws std::system_error when reading a packet fd fails, or
  // std::runtime_error when one reports end of file.
  void run(int stop_fd, std::optional<Clock::time_point> until);

  const LinkQueue& a_to_b() const { return a_to_b_; }
  const LinkQueue& b_to_a() const { return b_to_a_; }
  const ForwarderStats& stats() const { return stats_; }

 private:
  void read_all(int fd, LinkQueue& queue);
  void write_due(LinkQueue& queue, int fd, std::uint64_t& write_errors, Clock::time_point now);
  void arm_timer(std::optional<Clock::time_point> at);

  int fd_a_;
  int fd_b_;
  LinkQueue a_to_b_;
  LinkQueue b_to_a_;
  std::vector<std::byte> buffer_;
  ForwarderStats stats_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
};

}  // namespace poseidon::linkem
