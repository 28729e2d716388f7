#include "adam/adam_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "transport/wire/little_endian.h"

namespace poseidon::adam {

using transport::RemoteDescriptor;

namespace {

constexpr size_t kDescriptorBytes = RemoteDescriptor::kEncodedSize;
constexpr size_t kFingerprintBytes = 4;

Status publish(transport::bootstrap::Store& store, const std::string& key, const AdamLayout& layout,
               std::initializer_list<const transport::MemoryRegion*> regions) {
  std::vector<uint8_t> value(kFingerprintBytes);
  transport::wire::storeLe32(value.data(), layout.fingerprint());
  for (const transport::MemoryRegion* region : regions) {
    const auto bytes = region->remote().serialize();
    value.insert(value.end(), bytes.begin(), bytes.end());
  }
  return store.set(key, value);
}

// The `count` descriptors `who` published under `key`, each at least as long as `needed` says.
Result<std::vector<RemoteDescriptor>> fetch(transport::bootstrap::Store& store, const std::string& key,
                                            const std::string& who, const AdamLayout& layout,
                                            std::initializer_list<uint64_t> needed, Deadline deadline) {
  auto value = store.get(key, deadline);
  if (!value) return value.status().withContext("the buffers of " + who);
  const size_t expected = kFingerprintBytes + needed.size() * kDescriptorBytes;
  if (value->size() != expected) {
    return makeStatus(StatusCode::kProtocolError, "store key {} of {} holds {} bytes; expected {}", key, who,
                      value->size(), expected);
  }
  const uint32_t fingerprint = transport::wire::loadLe32(value->data());
  if (fingerprint != layout.fingerprint()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} was given other Adam layers, worker or server counts (layout fingerprint {:#010x}, "
                      "expected {:#010x})",
                      who, fingerprint, layout.fingerprint());
  }
  std::vector<RemoteDescriptor> descriptors;
  const uint8_t* next = value->data() + kFingerprintBytes;
  for (uint64_t bytes : needed) {
    auto descriptor = RemoteDescriptor::parse(std::span<const uint8_t>(next, kDescriptorBytes));
    if (!descriptor) return descriptor.status().withContext(fmt::format("store key {} of {}", key, who));
    if (descriptor->length < bytes) {
      return makeStatus(StatusCode::kProtocolError, "{} published a buffer of {} bytes; the layout needs {}", who,
                        descriptor->length, bytes);
    }
    descriptors.push_back(*descriptor);
    next += kDescriptorBytes;
  }
  return descriptors;
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

std::string adamServerKey(std::string_view context_name, int server) {
  return fmt::format("{}/adam/server/{}", context_name, server);
}

std::string adamWorkerKey(std::string_view context_name, int worker) {
  return fmt::format("{}/adam/worker/{}", context_name, worker);
}

Status publishAdamServer(transport::bootstrap::Store& store, std::string_view context_name, int server,
                         const AdamLayout& layout, const transport::MemoryRegion& slots) {
  return publish(store, adamServerKey(context_name, server), layout, {&slots});
}

Status publishAdamWorker(transport::bootstrap::Store& store, std::string_view context_name, int worker,
                         const AdamLayout& layout, const transport::MemoryRegion& gradients,
                         const transport::MemoryRegion& notices) {
  return publish(store, adamWorkerKey(context_name, worker), layout, {&gradients, &notices});
}

Result<std::vector<RemoteDescriptor>> fetchAdamServers(transport::bootstrap::Store& store,
                                                      std::string_view context_name, const AdamLayout& layout,
                                                      Deadline deadline) {
  std::vector<RemoteDescriptor> slots;
  for (int s = 0; s < layout.servers(); ++s) {
    const uint64_t needed = uint64_t{layout.slotTotal(s)} * sizeof(float);
    auto one = fetch(store, adamServerKey(context_name, s), fmt::format("Adam server {}", s), layout, {needed},
                     deadline);
    if (!one) return one.status();
    slots.push_back(one->front());
  }
  return slots;
}

Result<std::vector<AdamWorkerRegions>> fetchAdamWorkers(transport::bootstrap::Store& store,
                                                       std::string_view context_name, const AdamLayout& layout,
                                                       Deadline deadline) {
  std::vector<AdamWorkerRegions> workers;
  const uint64_t gradients = uint64_t{layout.gradientTotal()} * sizeof(float);
  const uint64_t notices = uint64_t{static_cast<size_t>(layout.servers()) * kAdamNoticeBytes};
  for (int p = 0; p < layout.workers(); ++p) {
    auto both = fetch(store, adamWorkerKey(context_name, p), fmt::format("Adam worker {}", p), layout,
                      {gradients, notices}, deadline);
    if (!both) return both.status();
    workers.push_back({(*both)[0], (*both)[1]});
  }
  return workers;
}

}  // namespace poseidon::adam
