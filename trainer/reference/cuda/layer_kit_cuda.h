// The GPU twins as a LayerKit: Conv2dCuda, ReluCuda, MaxPool2dCuda, FullyConnectedCuda and
// SoftmaxCrossEntropyCuda, all on one GpuContext and in its device memory. Any network described
// over a LayerKit (buildFashionCnn) then builds on the GPU:
//
//   auto context = GpuContext::create().value();
//   Network net = buildFashionCnn(cudaKit(*context), 64, /*seed=*/1).value();
//
// with the CPU network's parameter layout and, from the same seed, its parameters (drawn on the
// host, uploaded). The context must outlive the network.
#pragma once

#include "trainer/reference/cuda/gpu_context.h"
#include "trainer/reference/layer_kit.h"

namespace poseidon::trainer::reference {

LayerKit cudaKit(GpuContext& context);

}  // namespace poseidon::trainer::reference
