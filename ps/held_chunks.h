// HeldChunks: chunks waiting for room in a byte window, the most urgent first.
//
// Both ends of the PS hold sends back so the bytes in flight stay under a window: the worker its
// pushes to each server (acks pace it to the aggregation), a server its parameter writes to each
// worker that asked for priority (ParamSendQueue). Either way the held chunks leave by key (the
// chunk's index under priority: nearest the model's input first) and, among equal keys, in the
// order they were held, so a caller wanting FIFO holds every chunk under one key. One chunk always
// goes when nothing is in flight, whatever its size.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <functional>
#include <tuple>
#include <vector>

namespace poseidon::ps {

class HeldChunks {
 public:
  // Room for `count` chunks: holding no more never allocates.
  void reserve(size_t count) { heap_.reserve(count); }

  void hold(uint64_t key, uint32_t chunk) {
    heap_.push_back({key, sequence_++, chunk});
    std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  }

  // Forgets the entry of `chunk` held earliest; false when it is not held.
  bool erase(uint32_t chunk) {
    auto entry = heap_.end();
    for (auto e = heap_.begin(); e != heap_.end(); ++e) {
      if (e->chunk == chunk && (entry == heap_.end() || e->sequence < entry->sequence)) entry = e;
    }
    if (entry == heap_.end()) return false;
    heap_.erase(entry);
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    return true;
  }

  // Lets chunks go while the window has room: `in_flight` (bytes sent and not yet done) grows by
  // each released chunk's `bytes_of(chunk)` before `send(chunk)` is called.
  template <class BytesOf, class Send>
  void release(uint64_t& in_flight, uint64_t window, BytesOf&& bytes_of, Send&& send) {
    while (!heap_.empty()) {
      const uint32_t chunk = heap_.front().chunk;
      const uint64_t bytes = bytes_of(chunk);
      if (in_flight > 0 && in_flight + bytes > window) return;
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
      in_flight += bytes;
      send(chunk);
    }
  }

  size_t size() const { return heap_.size(); }
  bool empty() const { return heap_.empty(); }

 private:
  struct Entry {
    uint64_t key = 0;
    uint64_t sequence = 0;  // ties in held order
    uint32_t chunk = 0;
    // A declared result type: clang 14 cannot use a deduced one inside the class's own members.
    friend std::strong_ordering operator<=>(const Entry& a, const Entry& b) {
      return std::tie(a.key, a.sequence, a.chunk) <=> std::tie(b.key, b.sequence, b.chunk);
    }
  };
  std::vector<Entry> heap_;  // a min-heap
  uint64_t sequence_ = 0;
};

}  // namespace poseidon::ps
