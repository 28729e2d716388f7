// Shard: the chunks one server holds, in the order it stores them. Local chunk j of server s is
// global chunk s + j * P2, stored right after local chunk j - 1 (chunks cut short at the model's
// end or at a chunk start take only their own bytes), so the local layout has no holes.
#pragma once

#include <cstdint>
#include <vector>

#include "ps/chunk_layout.h"

namespace poseidon::ps {

struct ShardChunk {
  uint32_t global = 0;        // chunk id in the layout
  uint64_t offset = 0;        // bytes into the server's memory
  uint64_t model_offset = 0;  // bytes into the packed model (a worker's buffers)
  uint64_t bytes = 0;
};

struct Shard {
  int server = 0;
  std::vector<ShardChunk> chunks;
  uint64_t bytes = 0;

  static Shard of(const ChunkLayout& layout, int server);
  // Local index of a global chunk that lives on this server.
  uint32_t localIndex(uint32_t global, int servers) const { return global / static_cast<uint32_t>(servers); }
};

}  // namespace poseidon::ps
