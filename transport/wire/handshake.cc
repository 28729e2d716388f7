#include "transport/wire/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <random>

#include "transport/wire/little_endian.h"

namespace poseidon::transport::wire {
namespace {

Status checkMagic(const uint8_t* bytes, const char* what, const std::string& peer) {
  const uint32_t magic = loadLe32(bytes);
  if (magic != kHandshakeMagic) {
    return makeStatus(StatusCode::kProtocolError, "{} magic 0x{:08x} from {} is not 0x{:08x} (not a Poseidon peer?)",
                      what, magic, peer, kHandshakeMagic);
  }
  return Status::ok();
}

Result<Verdict> parseVerdict(uint16_t raw, const std::string& peer) {
  if (raw > static_cast<uint16_t>(Verdict::kFeatureMismatch)) {
    return makeStatus(StatusCode::kProtocolError, "handshake verdict {} from {} is not one of 0..4", raw, peer);
  }
  return static_cast<Verdict>(raw);
}

}  // namespace

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kAccepted: return "accepted";
    case Verdict::kVersionMismatch: return "protocol version mismatch";
    case Verdict::kUnknownPeer: return "unknown context, rank or stream";
    case Verdict::kBadSecret: return "wrong job secret";
    case Verdict::kFeatureMismatch: return "frame encryption (encrypt_frames) is on at one side only";
  }
  return "unknown verdict";
}

std::array<uint8_t, kClientHelloSize> encodeClientHello(const ClientHello& h) {
  std::array<uint8_t, kClientHelloSize> out{};
  storeLe32(&out[0], kHandshakeMagic);
  storeLe16(&out[4], h.version);
  storeLe16(&out[6], h.features);
  storeLe64(&out[8], h.context_id);
  storeLe32(&out[16], h.src_rank);
  storeLe32(&out[20], h.dst_rank);
  storeLe32(&out[24], h.stream);
  storeLe32(&out[28], h.num_streams);
  std::copy(h.nonce.begin(), h.nonce.end(), out.begin() + 32);
  return out;
}

Result<ClientHello> decodeClientHello(const uint8_t* in, const std::string& peer) {
  POSEIDON_RETURN_IF_ERROR(checkMagic(in, "client hello", peer));
  ClientHello h;
  h.version = loadLe16(in + 4);
  h.features = loadLe16(in + 6);
  h.context_id = loadLe64(in + 8);
  h.src_rank = loadLe32(in + 16);
  h.dst_rank = loadLe32(in + 20);
  h.stream = loadLe32(in + 24);
  h.num_streams = loadLe32(in + 28);
  std::copy(in + 32, in + 64, h.nonce.begin());
  return h;
}

std::array<uint8_t, kServerHelloSize> encodeServerHello(const ServerHello& h) {
  std::array<uint8_t, kServerHelloSize> out{};
  storeLe32(&out[0], kHandshakeMagic);
  storeLe16(&out[4], h.version);
  storeLe16(&out[6], static_cast<uint16_t>(h.verdict));
  std::copy(h.nonce.begin(), h.nonce.end(), out.begin() + 8);
  std::copy(h.proof.begin(), h.proof.end(), out.begin() + 40);
  return out;
}

Result<ServerHello> decodeServerHello(const uint8_t* in, const std::string& peer) {
  POSEIDON_RETURN_IF_ERROR(checkMagic(in, "server hello", peer));
  ServerHello h;
  h.version = loadLe16(in + 4);
  auto verdict = parseVerdict(loadLe16(in + 6), peer);
  if (!verdict) return verdict.status();
  h.verdict = *verdict;
  std::copy(in + 8, in + 40, h.nonce.begin());
  std::copy(in + 40, in + 72, h.proof.begin());
  return h;
}

std::array<uint8_t, kClientProofSize> encodeClientProof(const Mac& proof) {
  std::array<uint8_t, kClientProofSize> out{};
  storeLe32(&out[0], kHandshakeMagic);
  std::copy(proof.begin(), proof.end(), out.begin() + 4);
  return out;
}

Result<Mac> decodeClientProof(const uint8_t* in, const std::string& peer) {
  POSEIDON_RETURN_IF_ERROR(checkMagic(in, "client proof", peer));
  Mac mac;
  std::copy(in + 4, in + 36, mac.begin());
  return mac;
}

std::array<uint8_t, kServerVerdictSize> encodeServerVerdict(Verdict verdict) {
  std::array<uint8_t, kServerVerdictSize> out{};
  storeLe32(&out[0], kHandshakeMagic);
  storeLe16(&out[4], static_cast<uint16_t>(verdict));
  return out;
}

Result<Verdict> decodeServerVerdict(const uint8_t* in, const std::string& peer) {
  POSEIDON_RETURN_IF_ERROR(checkMagic(in, "server verdict", peer));
  return parseVerdict(loadLe16(in + 4), peer);
}

namespace {
Mac hmacOverHandshake(const std::string& secret, const char* label, const uint8_t* client_hello,
                      const Nonce& server_nonce) {
  std::string message = label;
  message.append(reinterpret_cast<const char*>(client_hello), kClientHelloSize);
  message.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
  Mac mac{};
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &mac_len);
  return mac;
}
}  // namespace

Mac computeProof(const std::string& secret, Role role, const uint8_t* client_hello, const Nonce& server_nonce) {
  return hmacOverHandshake(secret, role == Role::kClient ? "poseidon-client-proof" : "poseidon-server-proof",
                           client_hello, server_nonce);
}

FrameKeys deriveFrameKeys(const std::string& secret, const uint8_t* client_hello, const Nonce& server_nonce) {
  // Labels unlike the proofs' ones: a key is never a value that went over the wire.
  return {hmacOverHandshake(secret, "poseidon-frame-key-client-to-server", client_hello, server_nonce),
          hmacOverHandshake(secret, "poseidon-frame-key-server-to-client", client_hello, server_nonce)};
}

bool proofsEqual(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Nonce randomNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    // OpenSSL's generator failed (no entropy source): fall back to the OS generator.
    std::random_device rd;
    for (auto& b : nonce) b = static_cast<uint8_t>(rd());
  }
  return nonce;
}

uint64_t contextId(const std::string& name) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace poseidon::transport::wire
