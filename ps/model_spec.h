// Model specs: how command lines name a model's tensor list, so every process of a job (servers,
// workers, benchmarks) builds the same chunk layout from the same words.
//
//   vgg19 | vgg19-22k                     the published architectures (ps/model_zoo.h)
//   uniform:<tensors>x<elements>          equal tensors, e.g. uniform:25x1048576 (100 MiB)
//   tensors:<name>=<elements>,...         an explicit list, in model order
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ps/chunk_layout.h"

namespace poseidon::ps {

// Errors name the spec and the part that does not parse.
Result<std::vector<TensorSpec>> parseModelSpec(std::string_view spec);
// The inverse for explicit lists: "tensors:a=3,b=4".
std::string formatModelSpec(const std::vector<TensorSpec>& tensors);

}  // namespace poseidon::ps
