// Test support: a fully connected group of contexts inside one process, one device per rank,
// rendezvousing through a FileStore in a fresh temporary directory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/bootstrap/file_store.h"
#include "transport/device.h"

namespace poseidon::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Mesh {
  std::unique_ptr<TempDir> dir;
  std::vector<std::shared_ptr<transport::Device>> devices;
  std::vector<std::shared_ptr<transport::Context>> contexts;
  transport::Context& operator[](int rank) { return *contexts[static_cast<size_t>(rank)]; }
};

// Connects `size` ranks. `options_for(rank)` may vary options per rank (a wrong secret, say);
// the statuses of each rank's connect() are returned in `statuses` when given, else any failure
// is returned.
Result<Mesh> makeMesh(int size, const transport::DeviceOptions& options, const std::string& name = "mesh");
std::vector<Status> connectMesh(Mesh& mesh, const std::vector<transport::DeviceOptions>& per_rank,
                                const std::string& name, std::chrono::milliseconds timeout);

// A registered buffer with its memory.
struct Buffer {
  std::vector<uint8_t> bytes;
  std::unique_ptr<transport::MemoryRegion> region;
};
Buffer makeBuffer(transport::Context& context, size_t size, uint8_t seed = 0);
// Deterministic content: byte i of a buffer filled with `seed`.
inline uint8_t patternByte(size_t i, uint8_t seed) {
  return static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 12)) & 0xFF);
}
void fillPattern(uint8_t* data, size_t size, uint8_t seed);
// Index of the first byte that differs from the pattern, or -1.
long long firstMismatch(const uint8_t* data, size_t size, uint8_t seed);

}  // namespace poseidon::testing
