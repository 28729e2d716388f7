// BlockPool and PoolAllocator: memory for the objects every operation makes and drops (its
// Request, a send's bookkeeping), recycled through a free list instead of the heap, so the hot
// path allocates nothing once the pool holds as many blocks as operations are in flight.
//
// One pool per block size, process-wide and never destroyed (a request may be dropped during
// static destruction, after any pool with a shorter life would be gone). A mutex guards the
// free list: uncontended it costs tens of nanoseconds, less than malloc and without its
// unbounded tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

namespace poseidon::transport {

class BlockPool {
 public:
  // Objects larger than this are not pooled (the transport's are a few hundred bytes).
  static constexpr size_t kMaxPooledBytes = 4096;
  // The pool of blocks of `bytes` (rounded up to the alignment new gives), 0 < bytes <=
  // kMaxPooledBytes.
  static BlockPool& forSize(size_t bytes);

  void* allocate();
  void deallocate(void* block);
  // Makes sure `blocks` blocks are free now (set-up, so steady state never reaches the heap).
  void reserve(size_t blocks);

 private:
  explicit BlockPool(size_t bytes) : bytes_(bytes) {}
  // More free blocks than this go back to the heap (a burst must not pin its memory forever).
  static constexpr size_t kMaxFree = size_t{1} << 16;
  const size_t bytes_;
  std::mutex mutex_;
  std::vector<void*> free_;
};

// A standard allocator drawing single objects from the BlockPool of their size (arrays and
// other counts go to the heap): std::allocate_shared(PoolAllocator<T>{}, ...) puts the object
// and its reference counts in one pooled block.
template <typename T>
class PoolAllocator {
 public:
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding is implicit by design

  static constexpr bool kPooled = sizeof(T) <= BlockPool::kMaxPooledBytes && alignof(T) <= alignof(std::max_align_t);

  T* allocate(size_t n) {
    if (n != 1 || !kPooled) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(BlockPool::forSize(sizeof(T)).allocate());
  }
  void deallocate(T* p, size_t n) {
    if (n != 1 || !kPooled) {
      ::operator delete(p);
      return;
    }
    BlockPool::forSize(sizeof(T)).deallocate(p);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

// Makes sure `count` objects of T made by std::allocate_shared(PoolAllocator<T>(), args...) come
// from the pool without reaching the heap (a device's set-up): made and dropped together.
template <typename T, typename... Args>
void reservePooled(size_t count, const Args&... args) {
  std::vector<std::shared_ptr<T>> made;
  made.reserve(count);
  for (size_t i = 0; i < count; ++i) made.push_back(std::allocate_shared<T>(PoolAllocator<T>(), args...));
}

}  // namespace poseidon::transport
