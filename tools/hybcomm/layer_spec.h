// Layer specs: how poseidon-hybcomm-bench's command line names the layers of its synthetic model,
// so every process of a job (workers, PS and Adam servers) builds the same layers from the same
// words.
//
//   fc:<name>=<M>x<N>,...;other:<name>=<parameters>,...
//
// Sections are separated by ';' and may come in any order and more than once; the layers are
// kept in the order written (forward order: the workers sync them backwards). An FC layer has an
// M x N weight (M outputs, N inputs; its factors are U: M x K and V: N x K); an "other" layer is
// only a count of parameters (it goes PS or ring). Names must be unique.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainer/hybcomm/layer_shape.h"
#include "common/status.h"

namespace poseidon::tools {

// VGG19-22K's fully-connected layers (fc6 4096 x 25088, fc7 4096 x 4096, fc8 21841 x 4096),
// every dimension divided by 4: small enough for a 2-core machine, with fc7 near the break-even
// of SFB and PS at K = 256 (see tools/bench-hybcomm).
inline constexpr const char* kDefaultLayerSpec = "fc:fc6=1024x6272,fc7=1024x1024,fc8=5460x1024";

// Errors name the spec and the part that does not parse ("layers 'fc:a=3y4': 'a=3y4' is not
// <name>=<M>x<N>").
Result<std::vector<trainer::LayerShape>> parseLayerSpec(std::string_view spec);

// "fc6 1024x6272": how reports name a layer's shape.
std::string describeLayer(const trainer::LayerShape& layer);

}  // namespace poseidon::tools
