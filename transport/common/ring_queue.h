// RingQueue: a FIFO in one contiguous ring that only grows (doubling when full) and never gives
// memory back, so a queue that is pushed and popped on every operation stops allocating once it
// reached the depth the job needs — std::deque allocates and frees a block every few hundred
// bytes that pass through it. Boost's circular_buffer is the ring; this adds the growth.
#pragma once

#include <algorithm>
#include <boost/circular_buffer.hpp>
#include <cstddef>
#include <utility>

namespace poseidon::transport {

template <typename T>
class RingQueue {
 public:
  using iterator = typename boost::circular_buffer<T>::iterator;

  // No memory until the first push or reserveFirst(): a rendezvous keeps three rings per tag a
  // peer names, and an empty one must cost only its header.
  RingQueue() = default;

  bool empty() const { return ring_.empty(); }
  size_t size() const { return ring_.size(); }
  T& front() { return ring_.front(); }
  T& back() { return ring_.back(); }
  T& operator[](size_t i) { return ring_[i]; }
  const T& operator[](size_t i) const { return ring_[i]; }
  iterator begin() { return ring_.begin(); }
  iterator end() { return ring_.end(); }

  void push_back(T value) {
    makeRoom();
    ring_.push_back(std::move(value));
  }
  // Inserts before position `index` (0 = the front).
  void insert(size_t index, T value) {
    makeRoom();
    ring_.insert(ring_.begin() + static_cast<std::ptrdiff_t>(index), std::move(value));
  }
  // Takes the first capacity now if the ring has none, so the first push allocates nothing.
  void reserveFirst() {
    if (ring_.capacity() == 0) ring_.set_capacity(kFirstCapacity);
  }
  void pop_front() { ring_.pop_front(); }
  void clear() { ring_.clear(); }

 private:
  void makeRoom() {
    if (ring_.full()) ring_.set_capacity(std::max<size_t>(kFirstCapacity, 2 * ring_.capacity()));
  }
  static constexpr size_t kFirstCapacity = 16;
  boost::circular_buffer<T> ring_;
};

}  // namespace poseidon::transport
