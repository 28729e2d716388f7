#include "adam/adam_protocol.h"

#include <fmt/format.h>

#include <algorithm>

#include "transport/bootstrap/region_exchange.h"

namespace poseidon::adam {

using transport::RemoteDescriptor;
using transport::bootstrap::RegionExchange;
using transport::bootstrap::RegionNeeds;

namespace {

// "<context>/adam/<role>/<member>": servers publish their slots, workers their gradient and
// notice buffers, each checked against the layout's fingerprint by whoever fetches them.
RegionExchange exchange(transport::bootstrap::Store& store, std::string_view context_name, const char* role) {
  return {transport::bootstrap::StoreView(store, std::string(context_name)).child("adam").child(role),
          {fmt::format("buffers of the Adam {}", role), fmt::format("Adam {}", role),
           "Adam layers, worker or server counts"}};
}

}  // namespace

void writeAdamNotice(std::span<uint8_t> notice, std::string_view text) {
  std::fill(notice.begin(), notice.end(), uint8_t{0});
  if (notice.empty()) return;
  const size_t length = std::min(text.size(), notice.size() - 1);
  std::copy_n(text.begin(), length, notice.begin());
}

std::string readAdamNotice(std::span<const uint8_t> notice) {
  std::string text;
  for (uint8_t byte : notice) {
    if (byte == 0) break;
    text.push_back(byte >= 0x20 && byte < 0x7F ? static_cast<char>(byte) : '?');
  }
  return text;
}

Status publishAdamServer(transport::bootstrap::Store& store, std::string_view context_name, int server,
                         const AdamLayout& layout, const transport::MemoryRegion& slots) {
  const RemoteDescriptor descriptors[] = {slots.remote()};
  return exchange(store, context_name, "server").publish(server, layout.fingerprint(), descriptors);
}

Status publishAdamWorker(transport::bootstrap::Store& store, std::string_view context_name, int worker,
                         const AdamLayout& layout, const transport::MemoryRegion& gradients,
                         const transport::MemoryRegion& notices) {
  const RemoteDescriptor descriptors[] = {gradients.remote(), notices.remote()};
  return exchange(store, context_name, "worker").publish(worker, layout.fingerprint(), descriptors);
}

Result<std::vector<RemoteDescriptor>> fetchAdamServers(transport::bootstrap::Store& store,
                                                       std::string_view context_name, const AdamLayout& layout,
                                                       Deadline deadline) {
  std::vector<int> servers(static_cast<size_t>(layout.servers()));
  for (int s = 0; s < layout.servers(); ++s) servers[static_cast<size_t>(s)] = s;
  const auto needs = [&](int s) { return RegionNeeds{layout.fingerprint(), {uint64_t{layout.slotTotal(s)} * 4}}; };
  auto published = exchange(store, context_name, "server").fetchAll(servers, needs, deadline);
  if (!published) return published.status();
  std::vector<RemoteDescriptor> slots;
  for (const auto& server : *published) slots.push_back(server.descriptors[0]);
  return slots;
}

Result<std::vector<AdamWorkerRegions>> fetchAdamWorkers(transport::bootstrap::Store& store,
                                                        std::string_view context_name, const AdamLayout& layout,
                                                        Deadline deadline) {
  std::vector<int> workers(static_cast<size_t>(layout.workers()));
  for (int p = 0; p < layout.workers(); ++p) workers[static_cast<size_t>(p)] = p;
  const RegionNeeds needs{layout.fingerprint(),
                          {uint64_t{layout.gradientTotal()} * sizeof(float),
                           uint64_t{static_cast<size_t>(layout.servers()) * kAdamNoticeBytes}}};
  auto published = exchange(store, context_name, "worker")
                       .fetchAll(
                           workers, [&](int) { return needs; }, deadline);
  if (!published) return published.status();
  std::vector<AdamWorkerRegions> regions;
  for (const auto& worker : *published) regions.push_back({worker.descriptors[0], worker.descriptors[1]});
  return regions;
}

}  // namespace poseidon::adam
