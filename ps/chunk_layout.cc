#include "ps/chunk_layout.h"

#include <algorithm>
#include <limits>
#include <set>

namespace poseidon::ps {

Result<ChunkLayout> ChunkLayout::build(std::span<const model::Tensor> tensors, int servers, uint64_t chunk_bytes,
                                       std::span<const size_t> chunk_starts) {
  if (tensors.empty()) return makeStatus(StatusCode::kInvalidArgument, "model has no tensors");
  if (servers < 1) return makeStatus(StatusCode::kInvalidArgument, "servers {} is not >= 1", servers);
  if (chunk_bytes == 0 || chunk_bytes % 4 != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "chunk size {} bytes is not a positive multiple of 4", chunk_bytes);
  }
  std::set<std::string> names;
  uint64_t total = 0;
  for (const model::Tensor& t : tensors) {
    if (t.floats == 0) return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' has 0 floats", t.name);
    if (!names.insert(t.name).second) {
      return makeStatus(StatusCode::kInvalidArgument, "tensor name '{}' appears twice", t.name);
    }
    if (t.floats > (std::numeric_limits<uint64_t>::max() - total) / 4) {
      return makeStatus(StatusCode::kInvalidArgument, "tensor '{}' of {} floats overflows the model size", t.name,
                        t.floats);
    }
    total += t.floats * 4;
  }
  for (size_t i = 0; i < chunk_starts.size(); ++i) {
    if (chunk_starts[i] >= tensors.size() || (i > 0 && chunk_starts[i] <= chunk_starts[i - 1])) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "chunk start {} (entry {}) is not a tensor index in [0, {}) above the previous entry",
                        chunk_starts[i], i, tensors.size());
    }
  }
  ChunkLayout layout;
  layout.servers_ = servers;
  layout.chunk_bytes_ = chunk_bytes;
  layout.pieces_.resize(tensors.size());
  // Walks the packed model once: a chunk closes when full or when the next tensor starts a fresh one.
  uint64_t position = 0;     // byte offset in the packed model
  uint64_t chunk_start = 0;  // where the open chunk began
  const auto closeChunk = [&]() -> Status {
    if (position == chunk_start) return Status::ok();
    if (layout.chunks_.size() >= std::numeric_limits<uint32_t>::max()) {
      return makeStatus(StatusCode::kInvalidArgument, "more than 2^32 chunks of {} bytes", chunk_bytes);
    }
    Chunk chunk;
    chunk.id = static_cast<uint32_t>(layout.chunks_.size());
    chunk.server = static_cast<int>(chunk.id % static_cast<uint32_t>(servers));
    chunk.model_offset = chunk_start;
    chunk.bytes = position - chunk_start;
    layout.chunks_.push_back(chunk);
    chunk_start = position;
    return Status::ok();
  };
  size_t next_start = 0;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (next_start < chunk_starts.size() && chunk_starts[next_start] == t) {
      ++next_start;
      POSEIDON_RETURN_IF_ERROR(closeChunk());
    }
    uint64_t left = tensors[t].floats * 4;
    uint64_t tensor_offset = 0;
    while (left > 0) {
      const uint64_t in_chunk = position - chunk_start;
      const uint64_t take = std::min(left, chunk_bytes - in_chunk);
      layout.pieces_[t].push_back({static_cast<uint32_t>(layout.chunks_.size()), in_chunk, tensor_offset, take});
      position += take;
      tensor_offset += take;
      left -= take;
      if (position - chunk_start == chunk_bytes) POSEIDON_RETURN_IF_ERROR(closeChunk());
    }
  }
  POSEIDON_RETURN_IF_ERROR(closeChunk());
  return layout;
}

std::vector<uint64_t> ChunkLayout::bytesPerServer() const {
  std::vector<uint64_t> bytes(static_cast<size_t>(servers_), 0);
  for (const Chunk& chunk : chunks_) bytes[static_cast<size_t>(chunk.server)] += chunk.bytes;
  return bytes;
}

Status ChunkLayout::checkLaysOut(std::span<const model::Tensor> tensors) const {
  if (tensors.size() != pieces_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "the chunk layout has {} tensors, the model {}", pieces_.size(),
                      tensors.size());
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    uint64_t bytes = 0;
    for (const TensorPiece& piece : pieces_[t]) bytes += piece.bytes;
    if (bytes != tensors[t].floats * 4) {
      return makeStatus(StatusCode::kInvalidArgument, "the chunk layout has {} bytes for tensor {} ('{}') of {} floats",
                        bytes, t, tensors[t].name, tensors[t].floats);
    }
  }
  return Status::ok();
}

std::vector<uint64_t> perTensorBytesPerServer(std::span<const model::Tensor> tensors, int servers) {
  std::vector<uint64_t> bytes(static_cast<size_t>(std::max(servers, 1)), 0);
  for (const model::Tensor& t : tensors) {
    auto least = std::min_element(bytes.begin(), bytes.end());
    *least += t.floats * 4;
  }
  return bytes;
}

uint64_t modelFingerprint(std::span<const model::Tensor> tensors) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64
  auto mix = [&hash](const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  };
  for (const model::Tensor& t : tensors) {
    mix(t.name.data(), t.name.size());
    const uint8_t separator = 0;
    mix(&separator, 1);
    uint8_t floats[8];  // little-endian, as the hash has always taken the count
    for (int i = 0; i < 8; ++i) floats[i] = static_cast<uint8_t>(t.floats >> (8 * i));
    mix(floats, sizeof floats);
  }
  return hash;
}

double imbalance(const std::vector<uint64_t>& bytes_per_server) {
  const auto [min, max] = std::minmax_element(bytes_per_server.begin(), bytes_per_server.end());
  if (*min == 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(*max) / static_cast<double>(*min);
}

}  // namespace poseidon::ps
