#include "transport/tcp/progress_engine.h"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace poseidon::transport::tcp {

ProgressEngine::ProgressEngine(bool busy_poll) : busy_poll_(busy_poll) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) throw StatusError(errnoStatus(StatusCode::kIoError, "epoll/eventfd creation"));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the wake-up fd
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { run(); });
}

ProgressEngine::~ProgressEngine() {
  stop_.store(true);
  wake();
  thread_.join();
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
      handler->onEvents(events[i].events);
    }
    iterations_.fetch_add(1, std::memory_order_release);
  }
}

}  // namespace poseidon::transport::tcp
