#include "transport/tcp/progress_engine.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace poseidon::transport::tcp {

namespace {
// epoll data of the timer fd (the wake-up fd's is nullptr; handlers are real objects).
EventHandler* const kTimerMarker = reinterpret_cast<EventHandler*>(uintptr_t{1});
}  // namespace

ProgressEngine::ProgressEngine(bool busy_poll) : busy_poll_(busy_poll) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0 || timer_fd_ < 0) {
    throw StatusError(errnoStatus(StatusCode::kIoError, "epoll/eventfd/timerfd creation"));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up fd
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  ev.data.ptr = kTimerMarker;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &ev);
  thread_ = std::thread([this] { run(); });
}

ProgressEngine::~ProgressEngine() {
  stop_.store(true);
  wake();
  thread_.join();
  ::close(timer_fd_);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void ProgressEngine::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

Status ProgressEngine::add(int fd, EventHandler* handler, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return errnoStatus(StatusCode::kIoError, "epoll_ctl(ADD)");
  return Status::ok();
}

Status ProgressEngine::modify(int fd, EventHandler* handler, uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) return errnoStatus(StatusCode::kIoError, "epoll_ctl(MOD)");
  return Status::ok();
}

void ProgressEngine::remove(int fd) {
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  if (inEngineThread()) return;
  // An iteration that started before the DEL may still hold the handler: wait for the engine
  // to finish it and begin another.
  const uint64_t seen = iterations_.load(std::memory_order_acquire);
  wake();
  while (iterations_.load(std::memory_order_acquire) < seen + 2 && !stop_.load()) {
    wake();
    std::this_thread::yield();
  }
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
  // Outside the lock: a handler may ask for its next wake. cancelWake + remove() wait this out.
  for (EventHandler* handler : due_) handler->onEvents(EPOLLOUT);
}

void ProgressEngine::run() {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (!stop_.load(std::memory_order_relaxed)) {
    const int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, busy_poll_ ? 0 : -1);
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
    iterations_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace poseidon::transport::tcp
