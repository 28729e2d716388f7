// Reading a whole gzip file into memory (zlib), with every failure a Status naming the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::trainer::data {

// The decompressed bytes of the gzip file at `path`. Fails, naming the file, when it is missing or
// unreadable, is not gzip (no 1f 8b magic), is truncated or corrupt, has bytes after the gzip
// stream, or would decompress to more than `max_bytes` (a bound, so a hostile file cannot exhaust
// memory).
Result<std::vector<uint8_t>> readGzipFile(const std::string& path, size_t max_bytes = size_t{1} << 30);

}  // namespace poseidon::trainer::data
