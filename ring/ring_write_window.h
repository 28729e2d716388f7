// RingWriteWindow: the one-sided writes a ring rank has posted and not yet seen complete, oldest
// first, in a ring buffer sized once at start (no allocation per write).
//
// A write's local range may be reused only once it completed, and a failed write means its pair
// broke; the window bounds how many are outstanding so their bookkeeping stays fixed-size.
#pragma once

#include <cstddef>
#include <vector>

#include "transport/request.h"

namespace poseidon::ring {

class RingWriteWindow {
 public:
  explicit RingWriteWindow(size_t capacity) : requests_(capacity) {}

  size_t size() const { return count_; }
  size_t capacity() const { return requests_.size(); }
  bool full() const { return count_ == requests_.size(); }
  bool empty() const { return count_ == 0; }

  // Requires !full().
  void push(transport::RequestPtr request) {
    requests_[(head_ + count_) % requests_.size()] = std::move(request);
    ++count_;
  }
  // Requires !empty().
  const transport::RequestPtr& oldest() const { return requests_[head_]; }
  void pop() {
    requests_[head_].reset();
    head_ = (head_ + 1) % requests_.size();
    --count_;
  }

  // Drops completed writes from the front; the first failure among them, if any.
  Status reap() {
    while (count_ > 0 && oldest()->test()) {
      Status status = oldest()->status();
      pop();
      if (!status.isOk()) return status;
    }
    return Status::ok();
  }

 private:
  std::vector<transport::RequestPtr> requests_;
  size_t head_ = 0;
  size_t count_ = 0;
};

}  // namespace poseidon::ring
