// The TCP store's request and response headers (transport/bootstrap/store_protocol.h) and the
// ledger that counts what a request may make the store hold (store_ledger.h): a header that
// validates is reserved, stored and replaced as the server would, and the ledger's totals must
// come back to zero when its owner leaves and its entries are replaced.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/bootstrap/store_ledger.h"
#include "transport/bootstrap/store_protocol.h"

using namespace poseidon::transport::bootstrap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  bytes.resize(kRequestHeaderBytes + kResponseHeaderBytes, 0);
  (void)validateResponseHeader(decodeResponseHeader(bytes.data() + kRequestHeaderBytes));
  const RequestHeader header = decodeRequestHeader(bytes.data());
  if (!validateRequestHeader(header)) return 0;
  StoreLedger ledger(StoreLimits{size_t{1} << 20, size_t{1} << 19});
  if (!ledger.reserve(1, header.key_bytes, header.value_bytes)) return 0;
  // Small stand-ins for the announced sizes: the ledger's arithmetic is what is under test.
  const std::string key(std::min<size_t>(header.key_bytes, 64), 'k');
  ledger.set(1, key, std::vector<uint8_t>(std::min<size_t>(header.value_bytes, 64)));
  (void)ledger.add(2, "counter", static_cast<int64_t>(header.value_bytes) - (1 << 30));
  (void)ledger.add(4, "counter", header.key_bytes);  // an existing counter: stays charged to its maker
  if (ledger.ownerBytes(4) != 0) __builtin_trap();
  ledger.forgetOwner(1);
  ledger.set(3, key, {});
  ledger.set(3, "counter", {});
  if (ledger.reservedBytes() != 0) __builtin_trap();
  if (ledger.heldBytes() != StoreLedger::entryCost(key.size(), 0) + StoreLedger::entryCost(7, 0)) __builtin_trap();
  return 0;
}
