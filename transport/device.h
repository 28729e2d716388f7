// Device: one network interface of one backend, and the factory that picks a backend by name.
//
// A device owns the listening endpoint and the progress engine; contexts made from it share both.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "transport/context.h"
#include "transport/device_memory.h"

namespace poseidon::transport {

struct DeviceOptions {
  std::string backend = "tcp";             // "tcp" or "verbs"
  std::string address = "127.0.0.1";       // address to listen on and advertise to peers
  uint16_t port = 0;                       // 0: an ephemeral port
  std::string secret;                      // the job's shared secret, proven in every handshake
  int streams = 1;                         // tcp: parallel connections per pair (1..64)
  uint64_t stripe_bytes = 1u << 20;        // tcp: a message is cut into pieces of this size over the streams
  uint32_t max_frame_payload = 64u << 20;  // largest frame a peer may send us
  // tcp: CRC32C over every payload too (headers always carry one), so a flipped bit on the way is a
  // named error, never a silently wrong gradient; verbs relies on the link's own CRC (RoCE ICRC).
  bool payload_crc = true;
  // tcp: every frame sealed with AES-256-GCM (OpenSSL), under keys each connection derives from
  // the secret and its handshake's nonces: payloads unreadable and nothing alterable, replayable
  // or injectable on the way (docs/threat-model.md). Both sides must agree, or the handshake
  // refuses; needs a secret. Costs a copy and a cipher pass each way (README, bench-transport).
  bool encrypt_frames = false;
  int socket_buffer_bytes = 0;  // tcp: SO_SNDBUF/SO_RCVBUF; 0 keeps kernel autotuning
  bool busy_poll = false;       // progress engine spins instead of sleeping in epoll_wait
  // A thread waiting on a request drives the device itself (reads its sockets, polls its
  // completion queue) while no other thread does, instead of sleeping until the engine thread
  // hands the completion over (transport/progress.h). false: only the engine thread drives.
  bool waiters_drive = true;
  // tcp: the bandwidth manager's budget ([Poseidon 2015] section 4.3.3): every byte this device
  // sends, over all its contexts and pairs, within this many bytes per second (headers included);
  // 0: unmetered. Alone, each process keeps its own.
  uint64_t send_budget_bytes_per_s = 0;
  // tcp: the devices of every process on this host giving the same name (and budget) draw from
  // one budget (a shared-memory word, transport/common/send_budget.h): a worker and its colocated
  // server share the host's. Empty: this device's own.
  std::string send_budget_share;
  // verbs: the source GID index every queue pair uses (perftest's -x); -1 lets rdma_cm pick the
  // GID of the netdev carrying `address` (RoCE v2 where the port has it).
  int gid_index = -1;
  // verbs: the most one RDMA WRITE carries (ports allow up to 2 GiB); a longer message or write
  // is split into several. Tests lower it to run the split paths without gigabyte buffers.
  uint64_t max_write_bytes = uint64_t{1} << 30;
  std::chrono::milliseconds handshake_timeout{5000};
  // Tells GPU memory from host memory at registration (device_memory.h); null: the build's own.
  // Tests put a stand-in here to run the staging paths on machines without a GPU.
  std::shared_ptr<DeviceMemory> device_memory;

  Status validate() const;
  std::shared_ptr<DeviceMemory> deviceMemory() const { return device_memory ? device_memory : builtinDeviceMemory(); }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string backendName() const = 0;
  // "127.0.0.1:40123" for tcp: what peers connect to.
  virtual std::string listenAddress() const = 0;
  virtual Result<std::shared_ptr<Context>> createContext(int rank, int size, const std::string& name) = 0;
};

// Creates a device of options.backend; kUnavailable if that backend was not built in.
Result<std::shared_ptr<Device>> createDevice(const DeviceOptions& options);

}  // namespace poseidon::transport
