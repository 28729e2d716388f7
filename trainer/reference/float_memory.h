// FloatMemory: where a network's floats live, and how values move into, within and out of it.
//
// The reference layers keep everything in host memory (hostMemory()); their GPU twins
// (cuda/device_memory_cuda.h) keep it in device memory and move it on their stream. A Network and
// a ParametricLayer reach their buffers only through a FloatMemory, so the same classes serve both,
// and the spans they hand out point into whichever memory they were built on: a caller never
// dereferences a span without knowing which (Network::memory(), ParametricLayer::memory()).
#pragma once

#include <cstddef>
#include <span>

#include "common/status.h"
#include "kernels/dispatch.h"

namespace poseidon::trainer::reference {

// An owned array of floats in some memory, freed by the function it came with. Move-only.
class FloatBlock {
 public:
  using Release = void (*)(float*);

  FloatBlock() = default;
  FloatBlock(float* data, size_t size, Release release) : data_(data), size_(size), release_(release) {}
  ~FloatBlock();
  FloatBlock(FloatBlock&& other) noexcept;
  FloatBlock& operator=(FloatBlock&& other) noexcept;
  FloatBlock(const FloatBlock&) = delete;
  FloatBlock& operator=(const FloatBlock&) = delete;

  std::span<float> span() const { return {data_, size_}; }
  size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
  Release release_ = nullptr;
};

class FloatMemory {
 public:
  virtual ~FloatMemory() = default;

  // "host", "CUDA device": for messages.
  virtual const char* name() const = 0;
  // Where kernels on this memory run (kernels/dispatch.h): the CPU, or this memory's stream.
  virtual kernels::Place place() const = 0;

  // n floats, all zero. Fails, naming the size, when the memory cannot give them.
  virtual Result<FloatBlock> allocate(size_t n) const = 0;
  // Spans of equal size (else kInvalidArgument): host memory into this memory, this memory into
  // this memory, this memory into host memory. A device memory orders them on its stream; every
  // call returns once the source may be reused, and download once the host copy is complete.
  virtual Status upload(std::span<const float> host, std::span<float> to) const = 0;
  virtual Status copy(std::span<const float> from, std::span<float> to) const = 0;
  virtual Status download(std::span<const float> from, std::span<float> host) const = 0;

 protected:
  // OK when the sizes match; else kInvalidArgument naming this memory, the operation and both sizes.
  Status checkSameSize(const char* operation, size_t from, size_t to) const;
};

// Plain host memory (operator new[], std::copy). One object for the process.
const FloatMemory& hostMemory();

}  // namespace poseidon::trainer::reference
