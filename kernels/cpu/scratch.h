// Per-thread scratch for the CPU twins' packed panels and row blocks: grows to the largest size
// asked for and is kept, so a training loop allocates on its first call only (DESIGN.md: no
// allocation on the per-iteration hot path). 64-byte aligned, a cache line and a zmm register.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace poseidon::kernels::cpu {

class Scratch {
 public:
  // At least `count` floats; the contents are whatever the last user left.
  float* floats(size_t count) {
    if (count > capacity_) {
      const size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
      void* p = std::aligned_alloc(64, bytes);
      if (p == nullptr) throw std::bad_alloc();
      storage_.reset(static_cast<float*>(p));
      capacity_ = bytes / sizeof(float);
    }
    return storage_.get();
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> storage_;
  size_t capacity_ = 0;
};

}  // namespace poseidon::kernels::cpu
