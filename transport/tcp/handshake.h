// Drives the handshake (transport/common/handshake_steps.h, wire/handshake.h) over a connected
// TCP socket.
#pragma once

#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/common/handshake_steps.h"
#include "transport/device.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::tcp {

// The features a hello announces for these options (wire::HelloFeatures); a server refuses a
// hello whose features are not its own.
inline uint16_t helloFeatures(const DeviceOptions& options) {
  return options.encrypt_frames ? static_cast<uint16_t>(wire::kFeatureSealedFrames) : uint16_t{0};
}

// Connecting side. Returns the connection's frame keys only when both sides proved the secret
// and the server accepted; otherwise a status saying which check failed, on which side.
Result<wire::FrameKeys> clientHandshake(int fd, const std::string& secret, const wire::ClientHello& hello,
                                        Deadline deadline, const std::string& peer);

// Accepting side. `admit` decides whether the hello names a context, rank, stream and features
// we expect. Returns the hello of an accepted peer and the connection's frame keys; refused peers
// are told why and the status says it too.
struct AcceptedHello {
  wire::ClientHello hello;
  wire::FrameKeys keys;
};
Result<AcceptedHello> serverHandshake(int fd, const std::string& secret, Deadline deadline, const std::string& peer,
                                      const AdmitHello& admit);

}  // namespace poseidon::transport::tcp
