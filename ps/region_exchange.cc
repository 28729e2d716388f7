#include "ps/region_exchange.h"

#include <fmt/format.h>

namespace poseidon::ps {

using transport::RemoteDescriptor;

namespace {

constexpr size_t kSize = RemoteDescriptor::kEncodedSize;

std::string serverKey(const PsJob& job, int server) { return fmt::format("{}/server/{}/regions", job.name, server); }
std::string workerKey(const PsJob& job, int worker) { return fmt::format("{}/worker/{}/params", job.name, worker); }

// Parses `count` descriptors stored back to back under `key`.
Result<std::vector<RemoteDescriptor>> fetch(transport::bootstrap::Store& store, const std::string& key, size_t count,
                                            Deadline deadline) {
  auto value = store.get(key, deadline);
  if (!value) return value.status();
  if (value->size() != count * kSize) {
    return makeStatus(StatusCode::kProtocolError,
                                 "store key {} holds {} bytes; expected {} remote descriptors of {} bytes", key,
                                 value->size(), count, kSize);
  }
  std::vector<RemoteDescriptor> descriptors;
  for (size_t i = 0; i < count; ++i) {
    auto parsed = RemoteDescriptor::parse(std::span<const uint8_t>(value->data() + i * kSize, kSize));
    if (!parsed) return parsed.status().withContext(fmt::format("store key {}", key));
    descriptors.push_back(*parsed);
  }
  return descriptors;
}

void append(std::vector<uint8_t>& out, const transport::MemoryRegion& region) {
  const auto bytes = region.remote().serialize();
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

Status publishServerRegions(transport::bootstrap::Store& store, const PsJob& job, int server,
                            const transport::MemoryRegion& params, const transport::MemoryRegion& slots) {
  std::vector<uint8_t> value;
  append(value, params);
  append(value, slots);
  return store.set(serverKey(job, server), value);
}

Status publishWorkerRegion(transport::bootstrap::Store& store, const PsJob& job, int worker,
                           const transport::MemoryRegion& params) {
  std::vector<uint8_t> value;
  append(value, params);
  return store.set(workerKey(job, worker), value);
}

Result<std::vector<ServerRegions>> fetchServerRegions(transport::bootstrap::Store& store, const PsJob& job,
                                                      Deadline deadline) {
  std::vector<ServerRegions> regions;
  for (int server = 0; server < job.servers; ++server) {
    auto pair = fetch(store, serverKey(job, server), 2, deadline);
    if (!pair) return pair.status();
    regions.push_back({(*pair)[0], (*pair)[1]});
  }
  return regions;
}

Result<std::vector<RemoteDescriptor>> fetchWorkerRegions(transport::bootstrap::Store& store, const PsJob& job,
                                                        Deadline deadline) {
  std::vector<RemoteDescriptor> regions;
  for (int worker = 0; worker < job.workers; ++worker) {
    auto one = fetch(store, workerKey(job, worker), 1, deadline);
    if (!one) return one.status();
    regions.push_back(one->front());
  }
  return regions;
}

}  // namespace poseidon::ps
