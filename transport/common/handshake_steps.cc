#include "transport/common/handshake_steps.h"

#include <algorithm>

#include "transport/wire/frame.h"

namespace poseidon::transport {

using wire::Verdict;

namespace {

Status versionRefusal(const std::string& peer, uint16_t theirs, uint16_t ours) {
  return makeStatus(StatusCode::kAuthError, "{} speaks protocol version {}, this build speaks {}: refused", peer,
                    theirs, ours);
}

Status secretRefusal(const std::string& who) {
  return makeStatus(StatusCode::kAuthError,
                    "{} could not prove the job secret (the two sides were given different secrets): refused", who);
}

Status refusedBy(const std::string& peer, Verdict verdict) {
  return makeStatus(StatusCode::kAuthError, "{} refused the connection: {}", peer, wire::verdictName(verdict));
}

}  // namespace

wire::ClientHello newClientHello(uint64_t context_id, uint32_t src_rank, uint32_t dst_rank, uint32_t stream,
                                 uint32_t num_streams, uint16_t features) {
  wire::ClientHello hello;
  hello.version = wire::kProtocolVersion;
  hello.features = features;
  hello.context_id = context_id;
  hello.src_rank = src_rank;
  hello.dst_rank = dst_rank;
  hello.stream = stream;
  hello.num_streams = num_streams;
  hello.nonce = wire::randomNonce();
  return hello;
}

Result<ServerHelloStep> answerClientHello(const uint8_t* hello_bytes, const std::string& secret,
                                          const AdmitHello& admit, const std::string& peer) {
  auto hello = wire::decodeClientHello(hello_bytes, peer);
  if (!hello) return hello.status();
  ServerHelloStep step;
  step.hello = *hello;
  std::copy(hello_bytes, hello_bytes + wire::kClientHelloSize, step.hello_bytes.begin());
  step.nonce = wire::randomNonce();

  wire::ServerHello reply;
  reply.version = wire::kProtocolVersion;
  reply.nonce = step.nonce;
  // The version first: a peer of another version may mean something else by the other fields.
  reply.verdict = hello->version != wire::kProtocolVersion ? Verdict::kVersionMismatch : admit(*hello);
  if (reply.verdict == Verdict::kAccepted) {
    reply.proof = wire::computeProof(secret, wire::Role::kServer, hello_bytes, step.nonce);
  } else if (reply.verdict == Verdict::kVersionMismatch) {
    step.refusal = versionRefusal(peer, hello->version, wire::kProtocolVersion);
  } else {
    step.refusal =
        makeStatus(StatusCode::kAuthError, "refused {}: {} (context id 0x{:016x}, rank {} -> {}, stream {} of {})",
                   peer, wire::verdictName(reply.verdict), hello->context_id, hello->src_rank, hello->dst_rank,
                   hello->stream, hello->num_streams);
  }
  step.reply = wire::encodeServerHello(reply);
  return step;
}

Result<ClientProofStep> answerServerHello(const uint8_t* reply_bytes, const wire::ClientHello& hello,
                                          const uint8_t* hello_bytes, const std::string& secret,
                                          const std::string& peer) {
  auto reply = wire::decodeServerHello(reply_bytes, peer);
  if (!reply) return reply.status();
  if (reply->verdict == Verdict::kVersionMismatch || reply->version != hello.version) {
    return versionRefusal(peer, reply->version, hello.version);
  }
  if (reply->verdict != Verdict::kAccepted) return refusedBy(peer, reply->verdict);
  ClientProofStep step;
  const bool server_proved =
      wire::proofsEqual(reply->proof, wire::computeProof(secret, wire::Role::kServer, hello_bytes, reply->nonce));
  if (!server_proved) step.server_proof = secretRefusal(peer);
  step.server_nonce = reply->nonce;
  step.proof = wire::encodeClientProof(wire::computeProof(secret, wire::Role::kClient, hello_bytes, reply->nonce));
  return step;
}

Result<VerdictStep> judgeClientProof(const uint8_t* proof_bytes, const ServerHelloStep& answered,
                                     const std::string& secret, const std::string& peer) {
  auto proof = wire::decodeClientProof(proof_bytes, peer);
  if (!proof) return proof.status();
  const bool client_proved = wire::proofsEqual(
      *proof, wire::computeProof(secret, wire::Role::kClient, answered.hello_bytes.data(), answered.nonce));
  VerdictStep step;
  step.verdict = wire::encodeServerVerdict(client_proved ? Verdict::kAccepted : Verdict::kBadSecret);
  if (!client_proved) step.outcome = secretRefusal(fmt::format("{} (rank {})", peer, answered.hello.src_rank));
  return step;
}

Status checkServerVerdict(const uint8_t* verdict_bytes, const std::string& peer) {
  auto verdict = wire::decodeServerVerdict(verdict_bytes, peer);
  if (!verdict) return verdict.status();
  if (*verdict != Verdict::kAccepted) return refusedBy(peer, *verdict);
  return Status::ok();
}

}  // namespace poseidon::transport
