// Names of checkpoint files: "server-<s>.clock-<T>.ckpt", and the temporary name a file has while
// it is being written. The temporary name starts with a dot and has a suffix, so nothing that
// lists checkpoints can mistake an unfinished file for a complete one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace poseidon::ps {

struct CheckpointName {
  uint32_t server = 0;
  uint64_t clock = 0;
};

// "server-<s>.clock-<T>.ckpt" exactly: decimal numbers without sign, leading zeros or overflow
// (checkpointPath() could not have produced anything else), nothing before or after.
std::optional<CheckpointName> parseCheckpointName(std::string_view file_name);

// "<dir>/.server-<s>.clock-<T>.ckpt.tmp.<pid>": in the same directory, so rename() is atomic.
std::string checkpointTempPath(const std::string& dir, uint32_t server, uint64_t clock);

// Removes this server's temporary files left by processes that died while writing (a restarted
// server would otherwise keep gigabytes of them forever); returns how many went.
size_t removeStaleTemporaries(const std::string& dir, uint32_t server);

}  // namespace poseidon::ps
