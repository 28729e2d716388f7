// ChunkLayout: how a model's tensors are laid out as fixed-size chunks and placed on servers.
//
// The tensors (float32, in model order) are packed back to back into one byte space that is cut
// into chunks of chunk_bytes (2 MiB by default): a large tensor spans many chunks, small ones
// share one. Chunk i lives on server i mod P2, so every server holds the same number of full
// chunks give or take one, and bytes per server differ by at most one chunk however unequal the
// tensors are (per-tensor placement puts VGG19's 25088x4096 FC layer, 392 MiB, on one server).
// The layout is a pure function of the tensor list, P2 and the chunk size: every rank computes
// the same one without talking to the others.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/tensor.h"

namespace poseidon::ps {

inline constexpr uint64_t kDefaultChunkBytes = uint64_t{2} << 20;

// A contiguous part of one tensor inside one chunk.
struct TensorPiece {
  uint32_t chunk = 0;
  uint64_t chunk_offset = 0;   // bytes into the chunk
  uint64_t tensor_offset = 0;  // bytes into the tensor
  uint64_t bytes = 0;
};

struct Chunk {
  uint32_t id = 0;
  int server = 0;
  uint64_t model_offset = 0;  // bytes into the packed model where the chunk starts
  uint64_t bytes = 0;         // chunk_bytes, or less for the last chunk and one cut at a chunk start
};

class ChunkLayout {
 public:
  // `tensors`: a model's tensors() in model order (only names and float counts matter here).
  // Fails, naming the value, on an empty model, a tensor of 0 floats, duplicate names, servers
  // < 1, or a chunk size that is not a positive multiple of 4 bytes.
  // `chunk_starts`: indices of tensors (ascending) that begin a fresh chunk, the one before being
  // cut short. HybComm passes the model's layerStarts(), so no chunk is shared by two layers and a
  // layer can travel through the PS in an iteration when its neighbours go another way.
  static Result<ChunkLayout> build(std::span<const model::Tensor> tensors, int servers,
                                   uint64_t chunk_bytes = kDefaultChunkBytes,
                                   std::span<const size_t> chunk_starts = {});

  const std::vector<Chunk>& chunks() const { return chunks_; }
  const std::vector<TensorPiece>& piecesOf(size_t tensor) const { return pieces_[tensor]; }
  size_t tensorCount() const { return pieces_.size(); }
  int servers() const { return servers_; }
  uint64_t chunkBytes() const { return chunk_bytes_; }
  std::vector<uint64_t> bytesPerServer() const;
  // Fails, naming the tensor, unless the layout holds exactly these tensors' bytes in this order:
  // a server and a client given another model than the layout's would exchange other bytes.
  Status checkLaysOut(std::span<const model::Tensor> tensors) const;

 private:
  int servers_ = 1;
  uint64_t chunk_bytes_ = kDefaultChunkBytes;
  std::vector<Chunk> chunks_;
  std::vector<std::vector<TensorPiece>> pieces_;
};

// For comparison: stock per-tensor placement, each tensor whole on one server, the next tensor
// on the least loaded server (greedy, which is already kinder than round-robin).
std::vector<uint64_t> perTensorBytesPerServer(std::span<const model::Tensor> tensors, int servers);

// A 64-bit hash (FNV-1a) of the tensor names and float counts in order: checkpoints record it so
// a file written for another model is refused. Shapes and layer kinds do not enter it, so files
// written before models had them still load (the start-up agreement, model/fingerprint.h,
// compares those).
uint64_t modelFingerprint(std::span<const model::Tensor> tensors);

// max / min of bytes per server (infinity when a server holds nothing).
double imbalance(const std::vector<uint64_t>& bytes_per_server);

}  // namespace poseidon::ps
