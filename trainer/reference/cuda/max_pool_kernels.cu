#include "trainer/reference/cuda/launch_shape.cuh"
#include "trainer/reference/cuda/layer_kernels.h"

namespace poseidon::trainer::reference {

namespace {

// One thread per output: the same scan as MaxPool2d::forward, so the same maximum and index.
__global__ void maxPoolForward(PoolShape s, const float* x, float* y, uint32_t* argmax) {
  const size_t out_h = s.out_h;
  const size_t out_w = s.out_w;
  POSEIDON_GRID_STRIDE_LOOP(out, s.planes * out_h * out_w) {
    const size_t plane = out / (out_h * out_w);
    const size_t oh = out / out_w % out_h;
    const size_t ow = out % out_w;
    const size_t base = plane * s.height * s.width;
    size_t best = base + oh * s.window * s.width + ow * s.window;
    for (size_t i = 0; i < s.window; ++i) {
      const size_t row = base + (oh * s.window + i) * s.width + ow * s.window;
      for (size_t j = 0; j < s.window; ++j) {
        if (x[row + j] > x[best]) best = row + j;
      }
    }
    y[out] = x[best];
    argmax[out] = static_cast<uint32_t>(best);
  }
}

// One thread per input pixel, gathering instead of scattering: no clearing pass, no races.
__global__ void maxPoolBackward(PoolShape s, const uint32_t* argmax, const float* dy, float* dx) {
  const size_t out_h = s.out_h;
  const size_t out_w = s.out_w;
  POSEIDON_GRID_STRIDE_LOOP(i, s.planes * s.height * s.width) {
    const size_t plane = i / (s.height * s.width);
    const size_t oh = i / s.width % s.height / s.window;
    const size_t ow = i % s.width / s.window;
    float value = 0.0f;
    if (oh < out_h && ow < out_w) {
      const size_t out = (plane * out_h + oh) * out_w + ow;
      if (argmax[out] == i) value = dy[out];
    }
    dx[i] = value;
  }
}

}  // namespace

cudaError_t maxPoolForwardCuda(const PoolShape& shape, const float* x, float* y, uint32_t* argmax,
                               cudaStream_t stream) {
  maxPoolForward<<<blocksFor(shape.planes * shape.out_h * shape.out_w), kThreadsPerBlock, 0, stream>>>(shape, x, y,
                                                                                                       argmax);
  return cudaGetLastError();
}

cudaError_t maxPoolBackwardCuda(const PoolShape& shape, const uint32_t* argmax, const float* dy, float* dx,
                                cudaStream_t stream) {
  maxPoolBackward<<<blocksFor(shape.planes * shape.height * shape.width), kThreadsPerBlock, 0, stream>>>(shape, argmax,
                                                                                                         dy, dx);
  return cudaGetLastError();
}

}  // namespace poseidon::trainer::reference
