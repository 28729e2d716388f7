// The TCP data path's frame header decoder (transport/wire/frame.h), on every 56 bytes a peer
// could send. The first input byte chooses whether the header CRC is made right, so the fuzzer
// also reaches the field checks behind it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/wire/crc32c.h"
#include "transport/wire/frame.h"
#include "transport/wire/little_endian.h"

using namespace poseidon::transport::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 + kFrameHeaderSize) return 0;
  std::vector<uint8_t> header(data + 1, data + 1 + kFrameHeaderSize);
  if (data[0] & 1) storeLe32(&header[kFrameHeaderSize - 4], crc32c(header.data(), kFrameHeaderSize - 4));
  DecodeLimits limits;
  limits.max_payload = 1u << 20;
  auto decoded = decodeHeader(header.data(), limits, "fuzz");
  if (decoded) {
    // What decodes must encode back to the same bytes: nothing is silently dropped or changed.
    std::vector<uint8_t> again(kFrameHeaderSize);
    encodeHeader(*decoded, again.data());
    if (again != header) __builtin_trap();
  }
  return 0;
}
