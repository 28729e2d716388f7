// DispatchGate: which thread runs a device's event handlers right now — its engine thread or one
// thread waiting on a request (transport/progress.h). Handlers keep per-connection state that
// must see one thread at a time; holding the gate is that permission.
//
// A thread that needs the handlers quiet for a moment (to free one, or to stop the engine)
// calls quiesce(): it asks the holder to leave soon (the backend's wake-up nudges a holder
// blocked in epoll_wait or poll, which then sees leaveRequested()) and waits for the gate.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>

namespace poseidon::transport {

class DispatchGate {
 public:
  // Holds the gate for one scope; marks this thread as the holder so handlers can tell.
  class Turn {
   public:
    Turn(DispatchGate& gate, std::try_to_lock_t);  // owns() says whether it got the gate
    explicit Turn(DispatchGate& gate);             // blocks until it gets the gate
    ~Turn();
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    bool owns() const { return owns_; }

   private:
    DispatchGate& gate_;
    bool owns_ = false;
    const DispatchGate* previous_ = nullptr;
  };

  // True on the thread holding the gate (inside a handler, or the engine's own loop).
  bool heldHere() const;
  // A holder that is a waiting thread polls this and leaves when it turns true.
  bool leaveRequested() const { return quiescers_.load(std::memory_order_acquire) > 0; }
  // Waits until no thread runs handlers: asks a waiting holder to leave, calls `nudge` so one
  // blocked in the kernel notices, and takes and drops the gate. Returns at once on the holder's
  // own thread. Afterwards no handler call that started before runs any more.
  void quiesce(const std::function<void()>& nudge);

 private:
  std::mutex mutex_;
  std::atomic<int> quiescers_{0};
};

}  // namespace poseidon::transport
