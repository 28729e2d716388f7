// The connection handshake: protocol version and proof of the job's shared secret.
//
//   client -> server  ClientHello   (version, features, context, ranks, stream, client nonce)
//   server -> client  ServerHello   (version, verdict, server nonce, server proof)
//   client -> server  ClientProof   (client proof)
//   server -> client  ServerVerdict (accepted, or why not)
//
// A proof is HMAC-SHA256(secret, role || ClientHello bytes || server nonce): each side proves it
// knows the secret without sending it, and a recorded handshake cannot be replayed because the
// other side's nonce changes. The same secret, hello and nonce give each direction of the
// connection its own frame key (deriveFrameKeys) when frames are sealed. This file is pure
// encoding; tcp/ drives it over a socket.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace poseidon::transport::wire {

inline constexpr uint32_t kHandshakeMagic = 0x4B485350;  // "PSHK"
inline constexpr size_t kClientHelloSize = 64;
inline constexpr size_t kServerHelloSize = 72;
inline constexpr size_t kClientProofSize = 36;
inline constexpr size_t kServerVerdictSize = 8;

using Nonce = std::array<uint8_t, 32>;
using Mac = std::array<uint8_t, 32>;
using FrameKey = std::array<uint8_t, 32>;  // AES-256

// What the connecting side will do on the connection; the proofs cover it, and a server that
// would do otherwise refuses (kFeatureMismatch) rather than speak a different protocol.
enum HelloFeatures : uint16_t {
  kFeatureSealedFrames = 1u << 0,  // every frame AES-GCM sealed (DeviceOptions::encrypt_frames)
};
inline constexpr uint16_t kKnownFeatures = kFeatureSealedFrames;

enum class Verdict : uint16_t {
  kAccepted = 0,
  kVersionMismatch = 1,
  kUnknownPeer = 2,  // no context with that id, or a rank or stream out of range
  kBadSecret = 3,
  kFeatureMismatch = 4,  // e.g. frame encryption on one side only
};
const char* verdictName(Verdict verdict);

struct ClientHello {
  uint16_t version = 0;
  uint16_t features = 0;  // HelloFeatures
  uint64_t context_id = 0;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  uint32_t stream = 0;
  uint32_t num_streams = 0;
  Nonce nonce{};
};

struct ServerHello {
  uint16_t version = 0;
  Verdict verdict = Verdict::kAccepted;
  Nonce nonce{};
  Mac proof{};
};

std::array<uint8_t, kClientHelloSize> encodeClientHello(const ClientHello& hello);
Result<ClientHello> decodeClientHello(const uint8_t* bytes, const std::string& peer);

std::array<uint8_t, kServerHelloSize> encodeServerHello(const ServerHello& hello);
Result<ServerHello> decodeServerHello(const uint8_t* bytes, const std::string& peer);

std::array<uint8_t, kClientProofSize> encodeClientProof(const Mac& proof);
Result<Mac> decodeClientProof(const uint8_t* bytes, const std::string& peer);

std::array<uint8_t, kServerVerdictSize> encodeServerVerdict(Verdict verdict);
Result<Verdict> decodeServerVerdict(const uint8_t* bytes, const std::string& peer);

enum class Role { kClient, kServer };
// HMAC-SHA256(secret, role label || client hello bytes || server nonce).
Mac computeProof(const std::string& secret, Role role, const uint8_t* client_hello, const Nonce& server_nonce);
bool proofsEqual(const Mac& a, const Mac& b);  // constant time

// The connection's two frame keys: HMAC-SHA256(secret, direction label || client hello bytes ||
// server nonce). Fresh nonces on both sides make them new on every connection, so a frame
// counter from 0 never repeats a (key, nonce) pair and a frame recorded on one connection is
// refused on every other.
struct FrameKeys {
  FrameKey client_to_server{};
  FrameKey server_to_client{};
};
FrameKeys deriveFrameKeys(const std::string& secret, const uint8_t* client_hello, const Nonce& server_nonce);
Nonce randomNonce();

// Stable 64-bit id of a context name (FNV-1a), carried in the hello to route a connection.
uint64_t contextId(const std::string& name);

}  // namespace poseidon::transport::wire
