// ParamSendQueue: a server's parameter writes to the workers that asked for priority
// (PushSchedule::priority), nearest the model's input first.
//
// Without it a server writes a chunk's parameters to a worker the moment the chunk's version
// allows, and the transport sends them in that order. The backward pass pushes the layers nearest
// the output first, so their chunks are aggregated first and fill the link to each worker ahead of
// the first layers' chunks, which the worker's next forward pass needs first. Here the writes to
// such a worker wait in a min-heap by chunk index (chunks are laid out in model order, so the
// index grows with the distance from the input) and at most `window_bytes` of them are in the
// transport at a time (one chunk always goes): a chunk nearer the input overtakes a large layer
// between its chunks, ByteScheduler's priority on the way back. One thread, started when the first
// worker asks for priority (start()), posts every worker's writes; completions wake it
// (transport/completion_signal.h). A server no worker asks has no thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"
#include "ps/held_chunks.h"
#include "transport/completion_signal.h"
#include "transport/request.h"

namespace poseidon::ps {

class ParamSendQueue {
 public:
  // Writes `chunk`'s parameters to `worker` now (the server takes the chunk's lock and sends the
  // version it has then, which only grows); returns the write, or null when the worker is gone.
  using Post = std::function<transport::RequestPtr(int worker, uint32_t chunk)>;

  // `chunk_bytes`: each chunk's size, by index.
  ParamSendQueue(int workers, std::vector<uint64_t> chunk_bytes, uint64_t window_bytes, Post post);
  ~ParamSendQueue();
  ParamSendQueue(const ParamSendQueue&) = delete;
  ParamSendQueue& operator=(const ParamSendQueue&) = delete;

  // Starts the posting thread if it is not running; fails, naming why, when the system has no
  // thread to give. Call before the first enqueue.
  Status start();

  // Queues one write of `chunk` to `worker` (two answered pulls of a chunk are two writes, sent in
  // the order queued). The caller may hold the chunk's lock: posting happens on the queue's thread.
  void enqueue(int worker, uint32_t chunk);

  // Writes queued and not yet posted (tests).
  size_t held() const;

 private:
  struct WorkerQueue {
    HeldChunks held;                                                    // by chunk, then in queued order
    std::vector<std::pair<transport::RequestPtr, uint64_t>> in_flight;  // the write and its bytes
    uint64_t in_flight_bytes = 0;                                       // includes writes being posted
  };
  struct Posting {
    int worker = 0;
    uint32_t chunk = 0;
  };

  void loop();
  // Forgets finished writes and takes what the windows let go; mutex_ held.
  void takeSendable(std::vector<Posting>& out);

  const std::vector<uint64_t> chunk_bytes_;
  const uint64_t window_bytes_;
  const Post post_;
  const std::shared_ptr<transport::CompletionSignal> signal_ = std::make_shared<transport::CompletionSignal>();
  mutable std::mutex mutex_;
  std::vector<WorkerQueue> workers_;
  bool stopping_ = false;
  std::thread thread_;  // under mutex_ until destruction, which no start() or enqueue() races
};

}  // namespace poseidon::ps
