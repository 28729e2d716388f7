#include "tests/support/mesh.h"

#include <stdlib.h>

#include <filesystem>
#include <thread>

namespace poseidon::testing {

using namespace poseidon;
using namespace poseidon::transport;

TempDir::TempDir() {
  char pattern[] = "/tmp/poseidon-test-XXXXXX";
  const char* made = ::mkdtemp(pattern);
  if (made == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<Status> connectMesh(Mesh& mesh, const std::vector<DeviceOptions>& per_rank, const std::string& name,
                                std::chrono::milliseconds timeout) {
  const int size = static_cast<int>(per_rank.size());
  mesh.dir = std::make_unique<TempDir>();
  std::vector<Status> statuses(static_cast<size_t>(size));
  mesh.devices.resize(static_cast<size_t>(size));
  mesh.contexts.resize(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      const auto r = static_cast<size_t>(rank);
      auto device = createDevice(per_rank[r]);
      if (!device) {
        statuses[r] = device.status();
        return;
      }
      mesh.devices[r] = *device;
      auto context = (*device)->createContext(rank, size, name);
      if (!context) {
        statuses[r] = context.status();
        return;
      }
      mesh.contexts[r] = *context;
      auto store = bootstrap::FileStore::open(mesh.dir->path());
      if (!store) {
        statuses[r] = store.status();
        return;
      }
      statuses[r] = (*context)->connect(**store, Deadline::after(timeout));
    });
  }
  for (auto& t : threads) t.join();
  return statuses;
}

Result<Mesh> makeMesh(int size, const DeviceOptions& options, const std::string& name) {
  Mesh mesh;
  auto statuses =
      connectMesh(mesh, std::vector<DeviceOptions>(static_cast<size_t>(size), options), name, std::chrono::seconds(20));
  for (size_t r = 0; r < statuses.size(); ++r) {
    if (!statuses[r].isOk()) return statuses[r].withContext("rank " + std::to_string(r));
  }
  return mesh;
}

void fillPattern(uint8_t* data, size_t size, uint8_t seed) {
  for (size_t i = 0; i < size; ++i) data[i] = patternByte(i, seed);
}

long long firstMismatch(const uint8_t* data, size_t size, uint8_t seed) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != patternByte(i, seed)) return static_cast<long long>(i);
  }
  return -1;
}

Buffer makeBuffer(Context& context, size_t size, uint8_t seed) {
  Buffer buffer;
  buffer.bytes.resize(size);
  fillPattern(buffer.bytes.data(), size, seed);
  auto region = context.registerMemory(buffer.bytes.data(), size);
  if (!region) throw StatusError(region.status());
  buffer.region = std::move(*region);
  return buffer;
}

}  // namespace poseidon::testing
