// The progress engine: one thread per device that waits on every socket with epoll and calls
// the owner of each ready socket. It sleeps in epoll_wait, or spins when busy-polling (a wake-up
// across cores costs ~70 us on these machines, a spin costs a core).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace poseidon::transport::tcp {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Called on the engine thread with the epoll event bits.
  virtual void onEvents(uint32_t events) = 0;
};

class ProgressEngine {
 public:
  explicit ProgressEngine(bool busy_poll);
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  Status add(int fd, EventHandler* handler, uint32_t events);
  Status modify(int fd, EventHandler* handler, uint32_t events);
  // Stops delivering events for fd. When called from another thread it also waits until the
  // engine is past any dispatch that may still be using the handler, so the caller may free it.
  void remove(int fd);
  bool inEngineThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // Calls handler->onEvents(EPOLLOUT) on the engine thread once `delay` has passed (a stream
  // waiting for its send budget to refill). One wake per handler: while one is pending, another
  // call keeps the earlier time.
  void wakeAfter(EventHandler* handler, std::chrono::nanoseconds delay);
  // Drops the handler's pending wake; call before remove(), which then also waits out a wake
  // being delivered.
  void cancelWake(EventHandler* handler);

 private:
  using Wake = std::pair<std::chrono::steady_clock::time_point, EventHandler*>;
  void run();
  void wake();
  void armTimerLocked();
  void deliverDueWakes();

  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int timer_fd_ = -1;  // a timerfd set to the earliest pending wake
  std::mutex wakes_mutex_;
  std::vector<Wake> wakes_;         // pending, unordered (one per waiting stream: few)
  std::vector<EventHandler*> due_;  // engine thread: the wakes being delivered
  bool busy_poll_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> iterations_{0};
  std::thread thread_;
};

}  // namespace poseidon::transport::tcp
