// The progress engine: one epoll set of every socket of a device and the handlers that own them,
// run either by the engine's own thread or by a thread waiting on a request (Progress).
//
// Two epoll sets: the inner one holds the sockets, a wake-up eventfd and a timerfd; the engine
// thread sleeps on the outer one, which holds the inner set and a kick eventfd. A waiting
// thread that takes the dispatch gate removes the inner set from the outer one, so the engine
// thread is not woken for events the waiter handles itself, and polls the inner set while waits
// are short (AdaptiveSpin: no wake-up at all), then sleeps in epoll_wait on it: one wake-up per
// message, as a blocking socket read has. The inner set stays out across a run of waits; the
// engine thread puts it back once no waiter drove for kRejoin, and handles whatever is ready —
// or at once, when a driver leaves while other threads sleep on requests of this device.
// With busy-polling the engine thread spins instead of sleeping (a spin costs a core).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/common/adaptive_spin.h"
#include "transport/common/dispatch_gate.h"
#include "transport/progress.h"

struct epoll_event;

namespace poseidon::transport::tcp {

class EventHandler {
 public:
  virtual ~EventHandler() = default;
  // Called by the thread holding the dispatch gate with the epoll event bits. Readiness may be
  // stale (another dispatch consumed it): handlers use non-blocking calls only.
  virtual void onEvents(uint32_t events) = 0;
};

class ProgressEngine final : public Progress {
 public:
  explicit ProgressEngine(bool busy_poll);
  ~ProgressEngine() override;
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  Status add(int fd, EventHandler* handler, uint32_t events);
  Status modify(int fd, EventHandler* handler, uint32_t events);
  // Stops delivering events for fd. When called from a thread not running handlers it also
  // waits until no dispatch can still be using the handler, so the caller may free it.
  void remove(int fd);
  // True while this thread runs the engine's handlers (the engine thread or a driving waiter).
  bool dispatchingHere() const { return gate_.heldHere(); }

  // Calls handler->onEvents(EPOLLOUT) from a dispatch once `delay` has passed (a stream waiting
  // for its send budget to refill). One wake per handler: while one is pending, another call
  // keeps the earlier time.
  void wakeAfter(EventHandler* handler, std::chrono::nanoseconds delay);
  // Drops the handler's pending wake; call before remove(), which then also waits out a wake
  // being delivered.
  void cancelWake(EventHandler* handler);

  // Progress: a waiting thread handles every socket's events until its request completes.
  void drive(const Request& request, Deadline deadline) override;
  void sleeping(bool asleep) override { sleepers_.fetch_add(asleep ? 1 : -1, std::memory_order_acq_rel); }

 private:
  using Wake = std::pair<std::chrono::steady_clock::time_point, EventHandler*>;
  // How long after the last driving waiter left the engine thread takes the sockets back: the
  // most an event nobody waits for can sit unhandled after a run of waits.
  static constexpr std::chrono::milliseconds kRejoin{1};
  void run();
  // Engine thread: takes the inner set back if no waiter drives or drove within kRejoin.
  void rejoinWhenIdle();
  // Under the gate (or before the engine thread runs): puts the inner set back in the outer one.
  void rejoinLocked();
  void wake();  // wakes whoever sleeps on the inner set
  void kick();  // wakes the engine thread
  // Under the gate: waits up to `timeout_ms` for events of the inner set and handles them.
  void dispatchReady(int timeout_ms);
  void armTimerLocked();
  void deliverDueWakes();

  int inner_fd_ = -1;
  int outer_fd_ = -1;
  int wake_fd_ = -1;
  int kick_fd_ = -1;
  int timer_fd_ = -1;  // a timerfd set to the earliest pending wake
  DispatchGate gate_;
  AdaptiveSpin spin_;                          // how long a driving waiter polls before it sleeps in epoll_wait
  std::atomic<int> sleepers_{0};               // threads asleep on a request of this device
  std::atomic<bool> inner_out_{false};         // a waiter took the inner set out of the outer one
  std::atomic<int64_t> last_drive_end_ns_{0};  // steady_clock, when the last driving waiter left
  std::mutex wakes_mutex_;
  std::vector<Wake> wakes_;         // pending, unordered (one per waiting stream: few)
  std::vector<EventHandler*> due_;  // under the gate: the wakes being delivered
  bool busy_poll_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace poseidon::transport::tcp
