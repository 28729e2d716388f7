// CRC32C (Castagnoli), the checksum of frame headers and (by default) payloads, computed by
// Intel's ISA-L with the fastest instructions this CPU has.
#pragma once

#include <cstddef>
#include <cstdint>

namespace poseidon::transport::wire {

// Continues a CRC: crc32c(b, crc32c(a)) == crc32c(a+b). Start with 0.
uint32_t crc32c(const void* data, size_t length, uint32_t crc = 0);

}  // namespace poseidon::transport::wire
