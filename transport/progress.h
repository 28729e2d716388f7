// Progress: what a thread waiting on a Request can do instead of sleeping until the device's
// engine thread completes it — drive the wire itself (Gloo's "sync" mode, NCCL's polling proxy).
//
// A hand-off between the engine thread and the waiter costs a cross-core wake-up (tens of
// microseconds on small machines), more than a 64-byte message takes through the kernel; a
// waiter that reads its own socket or polls its own completion queue pays none. At most one
// thread drives a device at a time: a waiter that finds another thread driving sleeps as before
// and is completed by whoever drives.
#pragma once

#include "common/deadline.h"

namespace poseidon::transport {

class Request;

class Progress {
 public:
  virtual ~Progress() = default;
  // Runs the device's event handling on this thread until `request` completes, `deadline`
  // passes, or the backend stops (another thread needs the handlers quiet, or the backend can
  // only poll and spun long enough); returns at once when another thread is driving. The
  // caller then checks the request and sleeps on it if still pending. Never called from inside
  // the device's own event handling.
  virtual void drive(const Request& request, Deadline deadline) = 0;
  // The caller is about to sleep on a request it could not finish by driving, and has woken
  // again: while anyone sleeps, a driver that leaves hands the wire straight back to the engine
  // thread instead of keeping it for the next wait.
  virtual void sleeping(bool asleep) { (void)asleep; }
};

}  // namespace poseidon::transport
