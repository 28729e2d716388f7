#include "ps/shard.h"

namespace poseidon::ps {

Shard Shard::of(const ChunkLayout& layout, int server) {
  Shard shard;
  shard.server = server;
  for (const Chunk& chunk : layout.chunks()) {
    if (chunk.server != server) continue;
    shard.chunks.push_back({chunk.id, shard.bytes, chunk.model_offset, chunk.bytes});
    shard.bytes += chunk.bytes;
  }
  return shard;
}

}  // namespace poseidon::ps
