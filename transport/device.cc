#include "transport/device.h"

#include "transport/tcp/device.h"
#ifdef POSEIDON_HAVE_VERBS
#include "transport/verbs/device.h"
#endif

namespace poseidon::transport {

Status DeviceOptions::validate() const {
  if (streams < 1 || streams > 64) {
    return makeStatus(StatusCode::kInvalidArgument, "streams {} is not in [1, 64]", streams);
  }
  if (stripe_bytes < 4096 || stripe_bytes > max_frame_payload) {
    return makeStatus(StatusCode::kInvalidArgument, "stripe_bytes {} is not in [4096, max_frame_payload {}]",
                      stripe_bytes, max_frame_payload);
  }
  if (max_frame_payload < 4096) {
    return makeStatus(StatusCode::kInvalidArgument, "max_frame_payload {} is below 4096", max_frame_payload);
  }
  if (socket_buffer_bytes < 0) {
    return makeStatus(StatusCode::kInvalidArgument, "socket_buffer_bytes {} is negative", socket_buffer_bytes);
  }
  if (gid_index < -1) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "gid_index {} is not valid: expected -1 (automatic) or a GID table index >= 0", gid_index);
  }
  if (max_write_bytes < 4096 || max_write_bytes > (uint64_t{1} << 31)) {
    return makeStatus(StatusCode::kInvalidArgument, "max_write_bytes {} is not in [4096, 2147483648]", max_write_bytes);
  }
  if (send_budget_bytes_per_s > 0 && backend != "tcp") {
    return makeStatus(StatusCode::kInvalidArgument,
                      "send_budget_bytes_per_s {} with backend '{}': only the tcp backend keeps a send budget "
                      "(RDMA adapters pace in hardware; use the port's rate limit there)",
                      send_budget_bytes_per_s, backend);
  }
  if (!send_budget_share.empty() && send_budget_bytes_per_s == 0) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "send_budget_share '{}' without send_budget_bytes_per_s: a share of no budget",
                      send_budget_share);
  }
  if (send_budget_bytes_per_s > 0 && send_budget_bytes_per_s < 1024) {
    return makeStatus(StatusCode::kInvalidArgument, "send_budget_bytes_per_s {} is below 1024 (0: unmetered)",
                      send_budget_bytes_per_s);
  }
  if (encrypt_frames && backend != "tcp") {
    return makeStatus(StatusCode::kInvalidArgument,
                      "encrypt_frames with backend '{}': only the tcp backend seals frames (the adapter writes "
                      "verbs payloads straight into memory; see docs/threat-model.md)",
                      backend);
  }
  if (encrypt_frames && secret.empty()) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "encrypt_frames without a secret: the frame keys come from the job's secret, and an empty one "
                      "is known to everybody");
  }
  if (handshake_timeout.count() <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "handshake_timeout {} ms is not positive",
                      handshake_timeout.count());
  }
  return Status::ok();
}

Result<std::shared_ptr<Device>> createDevice(const DeviceOptions& options) {
  POSEIDON_RETURN_IF_ERROR(options.validate());
  if (options.backend == "tcp") return tcp::createTcpDevice(options);
  if (options.backend == "verbs") {
#ifdef POSEIDON_HAVE_VERBS
    return verbs::createVerbsDevice(options);
#else
    return makeStatus(StatusCode::kUnavailable,
                      "transport backend 'verbs' was not built in (rdma-core was not found at configure time)");
#endif
  }
  return makeStatus(StatusCode::kInvalidArgument, "transport backend '{}' is not one of: tcp, verbs", options.backend);
}

}  // namespace poseidon::transport
