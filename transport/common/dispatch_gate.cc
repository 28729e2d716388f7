#include "transport/common/dispatch_gate.h"

namespace poseidon::transport {
namespace {
// The gate this thread holds, if any (a thread holds at most one: handlers never wait).
thread_local const DispatchGate* t_held = nullptr;
}  // namespace

DispatchGate::Turn::Turn(DispatchGate& gate, std::try_to_lock_t) : gate_(gate) {
  owns_ = gate.mutex_.try_lock();
  if (owns_) {
    previous_ = t_held;
    t_held = &gate;
  }
}

DispatchGate::Turn::Turn(DispatchGate& gate) : gate_(gate) {
  gate.mutex_.lock();
  owns_ = true;
  previous_ = t_held;
  t_held = &gate;
}

DispatchGate::Turn::~Turn() {
  if (!owns_) return;
  t_held = previous_;
  gate_.mutex_.unlock();
}

bool DispatchGate::heldHere() const { return t_held == this; }

void DispatchGate::quiesce(const std::function<void()>& nudge) {
  if (heldHere()) return;
  quiescers_.fetch_add(1, std::memory_order_acq_rel);
  nudge();
  mutex_.lock();
  mutex_.unlock();
  quiescers_.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace poseidon::transport
