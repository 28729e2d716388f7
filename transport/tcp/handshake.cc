#include "transport/tcp/handshake.h"

#include "transport/common/socket.h"
#include "transport/wire/frame.h"

namespace poseidon::transport::tcp {

using wire::Verdict;

Status clientHandshake(int fd, const std::string& secret, const wire::ClientHello& hello, Deadline deadline,
                       const std::string& peer) {
  const auto hello_bytes = wire::encodeClientHello(hello);
  POSEIDON_RETURN_IF_ERROR(sendAll(fd, hello_bytes.data(), hello_bytes.size(), deadline, peer));

  uint8_t reply_bytes[wire::kServerHelloSize];
  POSEIDON_RETURN_IF_ERROR(recvAll(fd, reply_bytes, sizeof(reply_bytes), deadline, peer)
                               .withContext("handshake with " + peer));
  auto reply = wire::decodeServerHello(reply_bytes, peer);
  if (!reply) return reply.status();
  if (reply->verdict == Verdict::kVersionMismatch || reply->version != hello.version) {
    return makeStatus(StatusCode::kAuthError, "{} speaks protocol version {}, this build speaks {}: refused", peer,
                      reply->version, hello.version);
  }
  if (reply->verdict != Verdict::kAccepted) {
    return makeStatus(StatusCode::kAuthError, "{} refused the connection: {}", peer, wire::verdictName(reply->verdict));
  }
  const bool server_proved =
      wire::proofsEqual(reply->proof, wire::computeProof(secret, wire::Role::kServer, hello_bytes.data(), reply->nonce));
  // Send our proof even when the server's failed, so the server can log the mismatch too.
  const auto proof = wire::encodeClientProof(
      wire::computeProof(secret, wire::Role::kClient, hello_bytes.data(), reply->nonce));
  Status sent = sendAll(fd, proof.data(), proof.size(), deadline, peer);
  if (!server_proved) {
    return makeStatus(StatusCode::kAuthError,
                      "{} could not prove the job secret (the two sides were given different secrets): refused", peer);
  }
  POSEIDON_RETURN_IF_ERROR(sent);
  uint8_t verdict_bytes[wire::kServerVerdictSize];
  POSEIDON_RETURN_IF_ERROR(recvAll(fd, verdict_bytes, sizeof(verdict_bytes), deadline, peer)
                               .withContext("handshake with " + peer));
  auto verdict = wire::decodeServerVerdict(verdict_bytes, peer);
  if (!verdict) return verdict.status();
  if (*verdict != Verdict::kAccepted) {
    return makeStatus(StatusCode::kAuthError, "{} refused the connection: {}", peer, wire::verdictName(*verdict));
  }
  return Status::ok();
}

Result<wire::ClientHello> serverHandshake(int fd, const std::string& secret, Deadline deadline,
                                          const std::string& peer,
                                          const std::function<Verdict(const wire::ClientHello&)>& admit) {
  uint8_t hello_bytes[wire::kClientHelloSize];
  POSEIDON_RETURN_IF_ERROR(recvAll(fd, hello_bytes, sizeof(hello_bytes), deadline, peer)
                               .withContext("handshake with " + peer));
  auto hello = wire::decodeClientHello(hello_bytes, peer);
  if (!hello) return hello.status();

  wire::ServerHello reply;
  reply.version = wire::kProtocolVersion;
  reply.nonce = wire::randomNonce();
  if (hello->version != wire::kProtocolVersion) {
    reply.verdict = Verdict::kVersionMismatch;
  } else {
    reply.verdict = admit(*hello);
  }
  if (reply.verdict == Verdict::kAccepted) {
    reply.proof = wire::computeProof(secret, wire::Role::kServer, hello_bytes, reply.nonce);
  }
  const auto reply_bytes = wire::encodeServerHello(reply);
  POSEIDON_RETURN_IF_ERROR(sendAll(fd, reply_bytes.data(), reply_bytes.size(), deadline, peer));
  if (reply.verdict == Verdict::kVersionMismatch) {
    return makeStatus(StatusCode::kAuthError, "{} speaks protocol version {}, this build speaks {}: refused", peer,
                      hello->version, wire::kProtocolVersion);
  }
  if (reply.verdict != Verdict::kAccepted) {
    return makeStatus(StatusCode::kAuthError,
                      "refused {}: {} (context id 0x{:016x}, rank {} -> {}, stream {} of {})", peer,
                      wire::verdictName(reply.verdict), hello->context_id, hello->src_rank, hello->dst_rank,
                      hello->stream, hello->num_streams);
  }

  uint8_t proof_bytes[wire::kClientProofSize];
  POSEIDON_RETURN_IF_ERROR(recvAll(fd, proof_bytes, sizeof(proof_bytes), deadline, peer)
                               .withContext("handshake with " + peer));
  auto proof = wire::decodeClientProof(proof_bytes, peer);
  if (!proof) return proof.status();
  const bool client_proved =
      wire::proofsEqual(*proof, wire::computeProof(secret, wire::Role::kClient, hello_bytes, reply.nonce));
  const auto verdict = wire::encodeServerVerdict(client_proved ? Verdict::kAccepted : Verdict::kBadSecret);
  Status sent = sendAll(fd, verdict.data(), verdict.size(), deadline, peer);
  if (!client_proved) {
    return makeStatus(StatusCode::kAuthError,
                      "{} (rank {}) could not prove the job secret (the two sides were given different secrets): "
                      "refused",
                      peer, hello->src_rank);
  }
  POSEIDON_RETURN_IF_ERROR(sent);
  return hello;
}

}  // namespace poseidon::transport::tcp
