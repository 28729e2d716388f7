// The small CUDA kernels of the GPU twins that are not a cuBLAS or cuDNN call: ReLU, max-pooling
// and the softmax cross-entropy. Each computes exactly what its CPU twin's loop does, element
// for element, so ReLU and pooling give the CPU's bits; the loss differs only by the device's
// exp / log (double precision, within an ulp or two of libm's).
//
// Each launcher enqueues on `stream` and returns the launch's error (cudaSuccess once enqueued).
// No CUDA kernel syntax here, so the layer classes compile as plain C++.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace poseidon::trainer::reference {

// y = x > 0 ? x : 0, n floats.
cudaError_t reluForwardCuda(const float* x, float* y, size_t n, cudaStream_t stream);
// dx = y > 0 ? dy : 0, n floats.
cudaError_t reluBackwardCuda(const float* y, const float* dy, float* dx, size_t n, cudaStream_t stream);

// planes (K x C) of height x width, window x window blocks, stride = window, out_h = height /
// window and out_w = width / window (floor of the rest). Plain data: the kernels read it as is.
struct PoolShape {
  size_t planes = 0;
  size_t height = 0;
  size_t width = 0;
  size_t window = 0;
  size_t out_h = 0;
  size_t out_w = 0;
};
// y = each block's maximum; argmax = its index into x (the first in row-major order on a tie).
cudaError_t maxPoolForwardCuda(const PoolShape& shape, const float* x, float* y, uint32_t* argmax, cudaStream_t stream);
// dx[i] = dy[o] when i is output o's argmax, else 0 (blocks do not overlap: one writer per i).
cudaError_t maxPoolBackwardCuda(const PoolShape& shape, const uint32_t* argmax, const float* dy, float* dx,
                                cudaStream_t stream);

// Per sample k of `batch` (labels already checked to be in range): loss[k] = log sum exp(z - max)
// - (z[label] - max) in double, probabilities (float) = exp(z - max) / sum, correct[k] = 1 when
// the first largest logit is the label.
cudaError_t softmaxForwardCuda(const float* logits, const int32_t* labels, size_t batch, size_t classes,
                               float* probabilities, double* loss, int32_t* correct, cudaStream_t stream);
// dlogits = (probabilities - onehot(label)) * (1 / batch), in float as on the CPU.
cudaError_t softmaxBackwardCuda(const float* probabilities, const int32_t* labels, size_t batch, size_t classes,
                                float* dlogits, cudaStream_t stream);

}  // namespace poseidon::trainer::reference
