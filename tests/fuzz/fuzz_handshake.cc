// The connection handshake's four messages (transport/wire/handshake.h), as a stranger can send
// them before proving anything: each decoder reads the input, padded to the largest message.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "transport/wire/handshake.h"

using namespace poseidon::transport::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  bytes.resize(kServerHelloSize, 0);  // the largest message
  (void)decodeClientHello(bytes.data(), "fuzz");
  (void)decodeServerHello(bytes.data(), "fuzz");
  (void)decodeClientProof(bytes.data(), "fuzz");
  (void)decodeServerVerdict(bytes.data(), "fuzz");
  return 0;
}
