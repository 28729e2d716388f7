#include "transport/tcp/progress_engine.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/request.h"

namespace poseidon::transport::tcp {

namespace {
// epoll data of the timer fd (the wake-up fd's is nullptr; handlers are real objects).
EventHandler* const kTimerMarker = reinterpret_cast<EventHandler*>(uintptr_t{1});
// epoll data of the kick fd in the outer set (the inner set's is nullptr).
void* const kKickMarker = reinterpret_cast<void*>(uintptr_t{1});
constexpr int kMaxEvents = 64;

// Milliseconds to `deadline` for epoll_wait, rounded up so a wait never ends early: -1 is never.
int millisUntil(Deadline deadline) {
  if (deadline.isNever()) return -1;
  const auto left = deadline.remaining();
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, 1000000));
}
}  // namespace

ProgressEngine::ProgressEngine(bool busy_poll) : busy_poll_(busy_poll) {
  inner_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  outer_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  kick_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (inner_fd_ < 0 || outer_fd_ < 0 || wake_fd_ < 0 || kick_fd_ < 0 || timer_fd_ < 0) {
    throw StatusError(errnoStatus(StatusCode::kIoError, "epoll/eventfd/timerfd creation"));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up fd
  ::epoll_ctl(inner_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  ev.data.ptr = kTimerMarker;
  ::epoll_ctl(inner_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);
  ev.data.ptr = kKickMarker;
  ::epoll_ctl(outer_fd_, EPOLL_CTL_ADD, kick_fd_, &ev);
  rejoinLocked();
  thread_ = std::thread([this] { run(); });
}

ProgressEngine::~ProgressEngine() {
  stop_.store(true);
  gate_.quiesce([this] { wake(); });  // a driving waiter leaves (it checks stop_)
  kick();
  thread_.join();
  ::close(timer_fd_);
  ::close(kick_fd_);
  ::close(wake_fd_);
  ::close(outer_fd_);
  ::close(inner_fd_);
}

void ProgressEngine::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

void ProgressEngine::kick() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(kick_fd_, &one, sizeof(one));
}

Status ProgressEngine::add(int fd, EventHandler* handler, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(inner_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return errnoStatus(StatusCode::kIoError, "epoll_ctl(ADD)");
  return Status::ok();
}

Status ProgressEngine::modify(int fd, EventHandler* handler, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(inner_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) return errnoStatus(StatusCode::kIoError, "epoll_ctl(MOD)");
  return Status::ok();
}

void ProgressEngine::remove(int fd) {
  ::epoll_ctl(inner_fd_, EPOLL_CTL_DEL, fd, nullptr);
  // Events are fetched and handled under the gate, so once this thread had the gate no dispatch
  // holds the handler any more, and later ones cannot see the fd.
  gate_.quiesce([this] { wake(); });
}

void ProgressEngine::wakeAfter(EventHandler* handler, std::chrono::nanoseconds delay) {
  const auto at = std::chrono::steady_clock::now() + delay;
  std::lock_guard lock(wakes_mutex_);
  auto it = std::find_if(wakes_.begin(), wakes_.end(), [handler](const Wake& w) { return w.second == handler; });
  if (it != wakes_.end()) {
    if (it->first <= at) return;
    it->first = at;
  } else {
    wakes_.emplace_back(at, handler);
  }
  armTimerLocked();
}

void ProgressEngine::cancelWake(EventHandler* handler) {
  std::lock_guard lock(wakes_mutex_);
  std::erase_if(wakes_, [handler](const Wake& w) { return w.second == handler; });
}

void ProgressEngine::armTimerLocked() {
  itimerspec spec{};  // all zero disarms
  if (!wakes_.empty()) {
    const auto earliest = std::min_element(wakes_.begin(), wakes_.end())->first;
    const auto delay =
        std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(1), earliest - std::chrono::steady_clock::now());
    spec.it_value.tv_sec = static_cast<time_t>(delay.count() / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(delay.count() % 1000000000);
  }
  ::timerfd_settime(timer_fd_, 0, &spec, nullptr);
}

void ProgressEngine::deliverDueWakes() {
  uint64_t expirations;
  [[maybe_unused]] ssize_t r = ::read(timer_fd_, &expirations, sizeof(expirations));
  due_.clear();
  {
    std::lock_guard lock(wakes_mutex_);
    const auto now = std::chrono::steady_clock::now();
    for (const Wake& w : wakes_) {
      if (w.first <= now) due_.push_back(w.second);
    }
    std::erase_if(wakes_, [now](const Wake& w) { return w.first <= now; });
    armTimerLocked();
  }
  // Outside the wakes lock: a handler may ask for its next wake. cancelWake + remove() wait
  // this out (it runs under the gate).
  for (EventHandler* handler : due_) handler->onEvents(EPOLLOUT);
}

void ProgressEngine::dispatchReady(int timeout_ms) {
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(inner_fd_, events, kMaxEvents, timeout_ms);
  if (n < 0 && errno != EINTR) {
    spdlog::error("progress engine: epoll_wait failed: {}", std::strerror(errno));
  }
  for (int i = 0; i < n; ++i) {
    auto* handler = static_cast<EventHandler*>(events[i].data.ptr);
    if (handler == nullptr) {
      uint64_t drained;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_, &drained, sizeof(drained));
      continue;
    }
    if (handler == kTimerMarker) {
      deliverDueWakes();
      continue;
    }
    handler->onEvents(events[i].events);
  }
}

void ProgressEngine::run() {
  while (!stop_.load(std::memory_order_relaxed)) {
    if (busy_poll_) {
      if (gate_.leaveRequested()) std::this_thread::yield();  // let a quiescing thread have the gate
      DispatchGate::Turn turn(gate_);
      dispatchReady(0);
      continue;
    }
    // Woken when the inner set has events, or by a waiter that took the inner set out; then it
    // looks every kRejoin whether waiters stopped driving. Readiness seen here may be handled
    // by a waiter before this thread gets the gate; the dispatch then finds nothing.
    const bool out = inner_out_.load(std::memory_order_acquire);
    epoll_event ready;
    const int n = ::epoll_wait(outer_fd_, &ready, 1, out ? static_cast<int>(kRejoin.count()) : -1);
    if (n < 0 && errno != EINTR) spdlog::error("progress engine: epoll_wait failed: {}", std::strerror(errno));
    if (stop_.load(std::memory_order_relaxed)) break;
    if (n > 0 && ready.data.ptr == kKickMarker) {
      uint64_t drained;
      [[maybe_unused]] ssize_t r = ::read(kick_fd_, &drained, sizeof(drained));
    }
    if (out || inner_out_.load(std::memory_order_acquire)) {
      rejoinWhenIdle();
    } else if (n > 0) {
      DispatchGate::Turn turn(gate_);
      dispatchReady(0);
    }
  }
}

void ProgressEngine::rejoinLocked() {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the inner set, in the outer one
  ::epoll_ctl(outer_fd_, EPOLL_CTL_ADD, inner_fd_, &ev);
  inner_out_.store(false, std::memory_order_release);
}

void ProgressEngine::rejoinWhenIdle() {
  DispatchGate::Turn turn(gate_, std::try_to_lock);
  if (!turn.owns()) return;  // a waiter is driving
  if (inner_out_.load(std::memory_order_relaxed)) {
    const auto since = std::chrono::steady_clock::now().time_since_epoch() -
                       std::chrono::nanoseconds(last_drive_end_ns_.load(std::memory_order_relaxed));
    if (since < kRejoin) return;  // waiters are at it: they will be back soon
    rejoinLocked();
  }
  dispatchReady(0);
}

void ProgressEngine::drive(const Request& request, Deadline deadline) {
  if (busy_poll_ || stop_.load(std::memory_order_relaxed) || gate_.leaveRequested()) return;
  DispatchGate::Turn turn(gate_, std::try_to_lock);
  if (!turn.owns()) return;
  if (!inner_out_.load(std::memory_order_relaxed)) {
    // The engine thread stops being woken for the sockets; whatever it was already woken for it
    // handles (finding it done) once it gets the gate. The kick tells it to look back every
    // kRejoin, so the inner set stays out across a run of waits (two system calls saved on
    // each) and comes back once waiters stop driving.
    ::epoll_ctl(outer_fd_, EPOLL_CTL_DEL, inner_fd_, nullptr);
    inner_out_.store(true, std::memory_order_release);
    kick();
  }
  const auto give_up = [&] {
    return gate_.leaveRequested() || stop_.load(std::memory_order_relaxed) || deadline.expired();
  };
  // Poll first while waits are short (no wake-up at all), then sleep in epoll_wait.
  spin_.spin(
      [&] {
        dispatchReady(0);
        return request.test();
      },
      give_up);
  while (!request.test() && !give_up()) dispatchReady(millisUntil(deadline));
  last_drive_end_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  if (sleepers_.load(std::memory_order_acquire) > 0 || !request.test()) {
    // Someone sleeps on a request (this thread, too, if it leaves unfinished): the engine
    // thread takes the sockets back now rather than after kRejoin.
    rejoinLocked();
  }
}

}  // namespace poseidon::transport::tcp
