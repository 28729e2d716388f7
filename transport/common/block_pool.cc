#include "transport/common/block_pool.h"

#include <algorithm>
#include <array>
#include <memory>

namespace poseidon::transport {
namespace {
constexpr size_t kAlignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;
constexpr size_t kClasses = BlockPool::kMaxPooledBytes / kAlignment;
}  // namespace

BlockPool& BlockPool::forSize(size_t bytes) {
  // One pool per size class, made on first use; deliberately never destroyed (see the header).
  static std::array<BlockPool*, kClasses + 1>* pools = [] {
    auto* made = new std::array<BlockPool*, kClasses + 1>();
    for (size_t i = 1; i <= kClasses; ++i) (*made)[i] = new BlockPool(i * kAlignment);
    return made;
  }();
  const size_t index = std::max<size_t>(1, (bytes + kAlignment - 1) / kAlignment);
  return *(*pools)[std::min(index, kClasses)];
}

void* BlockPool::allocate() {
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      void* block = free_.back();
      free_.pop_back();
      return block;
    }
  }
  return ::operator new(bytes_);
}

void BlockPool::deallocate(void* block) {
  {
    std::lock_guard lock(mutex_);
    if (free_.size() < kMaxFree) {
      free_.push_back(block);
      return;
    }
  }
  ::operator delete(block);
}

void BlockPool::reserve(size_t blocks) {
  std::lock_guard lock(mutex_);
  if (free_.capacity() < blocks) free_.reserve(blocks);
  while (free_.size() < blocks) free_.push_back(::operator new(bytes_));
}

}  // namespace poseidon::transport
