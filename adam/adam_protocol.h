// What travels between Adam workers and servers besides the payload: the 32-bit immediates of
// their one-sided writes, the server's failure notice, and the store keys through which each side
// learns the other's registered buffers.
//
// Immediate layout: type (2 bits) | layer (14 bits) | value (16 bits). A receiver always knows the
// exact iteration it expects next from a peer on a layer (each side counts them), so the low 16
// bits of the iteration are enough to check it; a mismatch is the peer's protocol error.
//   worker -> server  kPush    layer, iteration: this worker's U and V of the layer are in its slot
//                     kBye     -: this worker is done (after its last gradient arrived)
//   server -> worker  kGradient layer, iteration: G of the layer is in the worker's gradient buffer
//                     kWaiting layer, worker: this iteration still waits for that worker's factors
//                              (sent once the iteration is late, so a timeout can name the laggard)
//                     kFailed  status code, worker (kAdamNoWorker: none): the server gave up; its
//                              reason is the text it wrote into the worker's notice buffer first
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "adam/adam_layer.h"
#include "transport/bootstrap/store.h"
#include "transport/memory.h"

namespace poseidon::adam {

inline constexpr size_t kAdamMaxLayers = size_t{1} << 14;
// kFailed's value when no worker is to blame; worker indices stay below it.
inline constexpr uint32_t kAdamNoWorker = 0xFFFF;
inline constexpr int kAdamMaxWorkers = static_cast<int>(kAdamNoWorker);

enum class AdamToServer : uint8_t { kPush = 0, kBye = 1 };
enum class AdamToWorker : uint8_t { kGradient = 0, kWaiting = 1, kFailed = 2 };

// A received immediate, its fields apart.
struct AdamImm {
  uint8_t type = 0;
  uint32_t layer = 0;
  uint32_t value = 0;  // an iteration's low 16 bits, a worker, or kAdamNoWorker

  static constexpr AdamImm decode(uint32_t imm) {
    return {static_cast<uint8_t>(imm >> 30), (imm >> 16) & 0x3FFF, imm & 0xFFFF};
  }
};

// The bits of an iteration that travel.
constexpr uint32_t adamIterationLow(uint64_t iteration) { return static_cast<uint32_t>(iteration & 0xFFFF); }

// `layer` < kAdamMaxLayers (AdamLayout::build refuses more); the low 16 bits of `value` travel.
template <typename Type>
requires std::same_as<Type, AdamToServer> || std::same_as<Type, AdamToWorker>
constexpr uint32_t encodeAdamImm(Type type, size_t layer, uint64_t value) {
  return uint32_t{static_cast<uint8_t>(type)} << 30 | static_cast<uint32_t>(layer & (kAdamMaxLayers - 1)) << 16 |
         adamIterationLow(value);
}

// Each worker registers one notice of this many bytes per server (server s's at s * kAdamNoticeBytes):
// the text of the server's failure, NUL-padded, written before its kFailed immediate.
inline constexpr size_t kAdamNoticeBytes = 512;

// Fills `notice` (kAdamNoticeBytes) with `text`, cut to leave at least one NUL.
void writeAdamNotice(std::span<uint8_t> notice, std::string_view text);
// The text of a notice from a peer: up to the first NUL, bytes outside printable ASCII as '?'.
std::string readAdamNotice(std::span<const uint8_t> notice);

// A worker's buffers a server writes into.
struct AdamWorkerRegions {
  transport::RemoteDescriptor gradients;
  transport::RemoteDescriptor notices;
};

// Keys "<context name>/adam/server/<s>" and "<context name>/adam/worker/<p>", one per rank, under
// the context's name so several jobs can share one store; the values are the region exchange's
// (transport/bootstrap/region_exchange.h), with the layout's fingerprint.
Status publishAdamServer(transport::bootstrap::Store& store, std::string_view context_name, int server,
                         const AdamLayout& layout, const transport::MemoryRegion& slots);
Status publishAdamWorker(transport::bootstrap::Store& store, std::string_view context_name, int worker,
                         const AdamLayout& layout, const transport::MemoryRegion& gradients,
                         const transport::MemoryRegion& notices);

// Every server's slot buffer, and every worker's buffers, by index. Fail naming the rank whose
// value is malformed, whose layout differs from ours (fingerprint), or whose buffer is smaller
// than the layout needs; a timeout names the key still missing.
Result<std::vector<transport::RemoteDescriptor>> fetchAdamServers(transport::bootstrap::Store& store,
                                                                  std::string_view context_name,
                                                                  const AdamLayout& layout, Deadline deadline);
Result<std::vector<AdamWorkerRegions>> fetchAdamWorkers(transport::bootstrap::Store& store,
                                                        std::string_view context_name, const AdamLayout& layout,
                                                        Deadline deadline);

}  // namespace poseidon::adam
