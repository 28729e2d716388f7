// The published architectures the placement and cost-model checks use, as tensor lists
// (weights then bias of each layer, float32).
#pragma once

#include <vector>

#include "ps/chunk_layout.h"

namespace poseidon::ps {

// VGG19 (Simonyan & Zisserman): 16 3x3 conv layers, then FC 25088x4096, 4096x4096 and
// 4096x`classes` (1000 for ImageNet-1K; 21841 for VGG19-22K).
std::vector<TensorSpec> vgg19(uint64_t classes = 1000);

}  // namespace poseidon::ps
