// The verbs backend's handshake: the steps of transport/common/handshake_steps.h, each message
// carried as the payload of a kHandshake control message (control.h) over the new queue pair,
// so a queue pair proves the job secret exactly as a TCP connection does. The active side runs
// VerbsPair::clientHandshake() (blocking); the passive side answers on the engine thread as the
// messages arrive (VerbsPair::onHandshakeLocked). Both are defined in handshake.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "transport/verbs/control.h"

namespace poseidon::transport::verbs {

// A kHandshake control message carrying `length` bytes of one wire handshake message.
ControlMessage handshakeMessage(const uint8_t* bytes, size_t length);

// Each handshake message carries exactly one wire handshake structure of a known size, checked
// before it is decoded; `what` names the one expected ("hello", "proof", ...).
Status checkHandshakeLength(const ControlMessage& m, size_t expected, const char* what, const std::string& peer);

}  // namespace poseidon::transport::verbs
