#include "transport/tcp/handshake.h"

#include "transport/common/handshake_steps.h"
#include "transport/common/socket.h"

namespace poseidon::transport::tcp {

// The steps and their verdicts are handshake_steps.h's; here only how the bytes travel.

Result<wire::FrameKeys> clientHandshake(int fd, const std::string& secret, const wire::ClientHello& hello,
                                        Deadline deadline, const std::string& peer) {
  const auto hello_bytes = wire::encodeClientHello(hello);
  POSEIDON_RETURN_IF_ERROR(sendAll(fd, hello_bytes.data(), hello_bytes.size(), deadline, peer));

  uint8_t reply_bytes[wire::kServerHelloSize];
  POSEIDON_RETURN_IF_ERROR(
      recvAll(fd, reply_bytes, sizeof(reply_bytes), deadline, peer).withContext("handshake with " + peer));
  auto proof = answerServerHello(reply_bytes, hello, hello_bytes.data(), secret, peer);
  if (!proof) return proof.status();
  Status sent = sendAll(fd, proof->proof.data(), proof->proof.size(), deadline, peer);
  POSEIDON_RETURN_IF_ERROR(proof->server_proof);
  POSEIDON_RETURN_IF_ERROR(sent);

  uint8_t verdict_bytes[wire::kServerVerdictSize];
  POSEIDON_RETURN_IF_ERROR(
      recvAll(fd, verdict_bytes, sizeof(verdict_bytes), deadline, peer).withContext("handshake with " + peer));
  POSEIDON_RETURN_IF_ERROR(checkServerVerdict(verdict_bytes, peer));
  return wire::deriveFrameKeys(secret, hello_bytes.data(), proof->server_nonce);
}

Result<AcceptedHello> serverHandshake(int fd, const std::string& secret, Deadline deadline, const std::string& peer,
                                      const AdmitHello& admit) {
  uint8_t hello_bytes[wire::kClientHelloSize];
  POSEIDON_RETURN_IF_ERROR(
      recvAll(fd, hello_bytes, sizeof(hello_bytes), deadline, peer).withContext("handshake with " + peer));
  auto answered = answerClientHello(hello_bytes, secret, admit, peer);
  if (!answered) return answered.status();
  POSEIDON_RETURN_IF_ERROR(sendAll(fd, answered->reply.data(), answered->reply.size(), deadline, peer));
  POSEIDON_RETURN_IF_ERROR(answered->refusal);

  uint8_t proof_bytes[wire::kClientProofSize];
  POSEIDON_RETURN_IF_ERROR(
      recvAll(fd, proof_bytes, sizeof(proof_bytes), deadline, peer).withContext("handshake with " + peer));
  auto judged = judgeClientProof(proof_bytes, *answered, secret, peer);
  if (!judged) return judged.status();
  Status sent = sendAll(fd, judged->verdict.data(), judged->verdict.size(), deadline, peer);
  POSEIDON_RETURN_IF_ERROR(judged->outcome);
  POSEIDON_RETURN_IF_ERROR(sent);
  return AcceptedHello{answered->hello, wire::deriveFrameKeys(secret, answered->hello_bytes.data(), answered->nonce)};
}

}  // namespace poseidon::transport::tcp
