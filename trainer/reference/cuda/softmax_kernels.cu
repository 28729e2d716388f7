#include "trainer/reference/cuda/launch_shape.cuh"
#include "trainer/reference/cuda/layer_kernels.h"

namespace poseidon::trainer::reference {

namespace {

// One thread per sample (a batch is tens of samples of ten classes: nothing to gain from more),
// the same steps as SoftmaxCrossEntropy::forward.
__global__ void softmaxForward(const float* logits, const int32_t* labels, size_t batch, size_t classes,
                               float* probabilities, double* loss, int32_t* correct) {
  POSEIDON_GRID_STRIDE_LOOP(k, batch) {
    const float* z = logits + k * classes;
    size_t top = 0;
    for (size_t c = 1; c < classes; ++c) {
      if (z[c] > z[top]) top = c;
    }
    const auto max = static_cast<double>(z[top]);
    double sum = 0.0;
    for (size_t c = 0; c < classes; ++c) sum += exp(static_cast<double>(z[c]) - max);
    const auto label = static_cast<size_t>(labels[k]);
    loss[k] = log(sum) - (static_cast<double>(z[label]) - max);
    for (size_t c = 0; c < classes; ++c) {
      probabilities[k * classes + c] = static_cast<float>(exp(static_cast<double>(z[c]) - max) / sum);
    }
    correct[k] = top == label ? 1 : 0;
  }
}

__global__ void softmaxBackward(const float* probabilities, const int32_t* labels, size_t batch, size_t classes,
                                float* dlogits) {
  const float scale = 1.0f / static_cast<float>(batch);
  POSEIDON_GRID_STRIDE_LOOP(i, batch * classes) {
    const float hit = static_cast<size_t>(labels[i / classes]) == i % classes ? 1.0f : 0.0f;
    dlogits[i] = (probabilities[i] - hit) * scale;
  }
}

}  // namespace

cudaError_t softmaxForwardCuda(const float* logits, const int32_t* labels, size_t batch, size_t classes,
                               float* probabilities, double* loss, int32_t* correct, cudaStream_t stream) {
  softmaxForward<<<blocksFor(batch), kThreadsPerBlock, 0, stream>>>(logits, labels, batch, classes, probabilities, loss,
                                                                    correct);
  return cudaGetLastError();
}

cudaError_t softmaxBackwardCuda(const float* probabilities, const int32_t* labels, size_t batch, size_t classes,
                                float* dlogits, cudaStream_t stream) {
  softmaxBackward<<<blocksFor(batch * classes), kThreadsPerBlock, 0, stream>>>(probabilities, labels, batch, classes,
                                                                               dlogits);
  return cudaGetLastError();
}

}  // namespace poseidon::trainer::reference
