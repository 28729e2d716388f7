// Drives the handshake (transport/common/handshake_steps.h, wire/handshake.h) over a connected
// TCP socket.
#pragma once

#include <string>

#include "common/deadline.h"
#include "common/status.h"
#include "transport/common/handshake_steps.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport::tcp {

// Connecting side. Returns OK only when both sides proved the secret and the server accepted;
// otherwise a status saying which check failed, on which side.
Status clientHandshake(int fd, const std::string& secret, const wire::ClientHello& hello, Deadline deadline,
                       const std::string& peer);

// Accepting side. `admit` decides whether the hello names a context, rank and stream we expect.
// Returns the hello of an accepted peer; refused peers are told why and the status says it too.
Result<wire::ClientHello> serverHandshake(int fd, const std::string& secret, Deadline deadline, const std::string& peer,
                                          const AdmitHello& admit);

}  // namespace poseidon::transport::tcp
