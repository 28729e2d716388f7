// An NVTX range for the lifetime of a scope, in the "poseidon" domain, so Nsight Systems shows
// each kernel call (CPU twin or CUDA launch) on the calling thread's timeline. Header-only NVTX 3
// from the CUDA toolkit: with no tool attached a range costs a load and a branch. A no-op in a
// build without the toolkit.
#pragma once

namespace poseidon::kernels {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace poseidon::kernels
