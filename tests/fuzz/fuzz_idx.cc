// The IDX reader behind the Fashion-MNIST loader (trainer/data/idx_file.h), on a file's bytes
// after gunzip: any bytes parse to an array whose size matches its dimensions, or to an error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/data/idx_file.h"

using namespace poseidon::trainer::data;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  for (IdxKind kind : {IdxKind::kImages, IdxKind::kLabels}) {
    auto parsed = parseIdx("fuzz", bytes, kind);
    if (!parsed) continue;
    size_t product = 1;
    for (uint32_t d : parsed->dims) product *= d;
    if (product != parsed->values.size()) __builtin_trap();
  }
  return 0;
}
