// The models whose per-layer decisions [Poseidon ATC'17] reports, with the per-node batch it trained them at.
//
// Batch sizes are [Poseidon ATC'17] Table 3 ([Poseidon analysis] section 3): GoogLeNet K = 128,
// VGG19 and VGG19-22K K = 32. ([Poseidon 2015] 5.2.1 trained GoogLeNet at K = 32, where its classifier goes
// SFB up to 31 nodes; at K = 128 it goes PS from 8 nodes on, the fallback [Poseidon analysis] section 5.4 reports.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/hybcomm/layer_shape.h"

namespace poseidon::trainer {

inline constexpr int64_t kVgg19BatchPerNode = 32;
inline constexpr int64_t kGoogLeNetBatchPerNode = 128;
inline constexpr int64_t kImageNet22kClasses = 21841;

struct Workload {
  std::string name;
  std::vector<LayerShape> layers;  // in forward order
  int64_t batch_per_node = 1;      // K
};

// VGG19 (1000 classes) and VGG19-22K, derived from ps::vgg19's tensors; fail only if that list
// stops following the "<layer>.weight/.bias" naming.
Result<Workload> vgg19Workload();
Result<Workload> vgg19_22kWorkload();
Workload googlenetWorkload(bool auxiliary_classifiers = false);

}  // namespace poseidon::trainer
