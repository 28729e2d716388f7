// SerialDriver: the thread that finishes a scheme's started syncs, one after another, in the
// order they were started (or, for gated work, in the order they become ready), completing the
// request each start() handed out.
//
// A scheme's start(layer) does at once what cannot block (posting its writes, a push, a pull)
// and hands the rest (waiting for peers, reducing, applying an update) to its driver, so the
// caller goes on with the backward pass of the layers below ([Poseidon ATC'17] section 3.1).
// Finishing in start order is what the schemes need: every worker starts a scheme's layers in
// the same order, so a ring's steps or SFB's banks line up across ranks, and NCCL's single
// stream per communicator keeps the same rule.
//
// Work may come with a gate: the requests it waits for first (a PS layer's push and pull). Gated
// work runs in the order it becomes ready, earliest submitted first among the ready, so a layer
// whose parameters came back first is finished first; the parameter server's layers are
// independent, and that is what lets the next forward pass start on the layers nearest the input
// while larger ones still arrive (ByteScheduler's priority needs it). Work without a gate is
// always ready: a driver given none keeps start order, as the ring and SFB need.
//
// Each piece of work carries the sync's own deadline, so a request always completes by then:
// with the work's status, or with kTimeout naming what it waited for. A waiter can therefore wait
// for the request without a deadline of its own. The destructor waits for the work running (bounded
// by its deadline), fails the work still queued with kUnavailable and refuses new work meanwhile.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/completion_signal.h"
#include "transport/request.h"

namespace poseidon::scheme {

// What gated work waits for before it runs: `requests` complete, or `deadline` passes (the work's
// own waits then name what is missing).
struct Gate {
  std::vector<transport::RequestPtr> requests;
  Deadline deadline = Deadline::never();
};

class SerialDriver {
 public:
  // `name` names the thread in failures ("ring all-reduce driver").
  explicit SerialDriver(std::string name);
  ~SerialDriver();
  SerialDriver(const SerialDriver&) = delete;
  SerialDriver& operator=(const SerialDriver&) = delete;

  // Queues `work` behind everything submitted before; the returned request (described by `what`,
  // e.g. "SFB sync of layer 2 'fc7' iteration 5") completes with the status `work` returns, which
  // names the layer and the peer itself. After shutdown began, the request fails at once.
  transport::RequestPtr submit(std::string what, std::function<Status()> work);
  // The same, but `work` runs only once its gate opened (see above). The gate's requests signal
  // this driver on completion (Request::signalOnCompletion), beside any other thread watching them.
  transport::RequestPtr submit(std::string what, std::function<Status()> work, Gate gate);

  // Works queued or running.
  size_t pending() const;

 private:
  struct Work {
    transport::RequestPtr request;
    std::function<Status()> run;
    Gate gate;
  };

  void loop();
  static Status run(Work& work);
  static bool ready(const Work& work);

  const std::string name_;
  mutable std::mutex mutex_;
  // New work, a gate's request completing, stopping: what the loop waits for.
  const std::shared_ptr<transport::CompletionSignal> signal_ = std::make_shared<transport::CompletionSignal>();
  std::deque<Work> queue_;
  size_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: started once the rest is built
};

}  // namespace poseidon::scheme
