// The model spec a user writes on a command line (model/spec.h: zoo names, uniform:, tensors:,
// fc:/conv:/other: sections): any text parses to a model or to an error, never a crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // a command line; longer specs only repeat what shorter ones reach
  auto model = poseidon::model::parseModelSpec(std::string_view(reinterpret_cast<const char*>(data), size));
  if (model) (void)model->totalParams();
  return 0;
}
