// The steps of the connection handshake (transport/wire/handshake.h), apart from how the bytes
// travel: TCP sends them over a socket (tcp/handshake.cc), verbs as control messages over the
// new queue pair (verbs/handshake.cc). Both backends run these same steps, so they refuse the
// same peers for the same reasons with the same messages.
//
//   client                                 server
//   newClientHello           -- hello -->  answerClientHello   (version, admit, server proof)
//   answerServerHello  <-- server hello --
//     (checks the server's proof)          -- proof -->  judgeClientProof  (checks the client's)
//   checkServerVerdict      <-- verdict --
//
// Each step returns the bytes to send next and what the step concluded. A Result error means
// the peer's bytes did not decode: nothing is sent back. A refusal is sent first (so the peer
// learns why) and then returned.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "transport/wire/handshake.h"

namespace poseidon::transport {

// Decides whether a hello names a context, rank and stream this side expects.
using AdmitHello = std::function<wire::Verdict(const wire::ClientHello&)>;

// Client, first step: this build's version, what it will do (wire::HelloFeatures) and a fresh
// nonce.
wire::ClientHello newClientHello(uint64_t context_id, uint32_t src_rank, uint32_t dst_rank, uint32_t stream,
                                 uint32_t num_streams, uint16_t features = 0);

// Server, after the client's hello.
struct ServerHelloStep {
  wire::ClientHello hello;
  std::array<uint8_t, wire::kClientHelloSize> hello_bytes{};  // what the client's proof covers
  wire::Nonce nonce{};                                        // ours, what the proofs cover too
  std::array<uint8_t, wire::kServerHelloSize> reply{};        // send it, whatever the verdict
  Status refusal;  // OK when accepted; otherwise the kAuthError to return once `reply` is sent
};
Result<ServerHelloStep> answerClientHello(const uint8_t* hello_bytes, const std::string& secret,
                                          const AdmitHello& admit, const std::string& peer);

// Client, after the server's hello. An error (refused, or not decodable): send nothing more.
// Otherwise send `proof` (even when the server did not prove the secret, so that side can log
// the mismatch too), then return `server_proof` if it is not OK, else await the verdict.
struct ClientProofStep {
  std::array<uint8_t, wire::kClientProofSize> proof{};
  Status server_proof;
  wire::Nonce server_nonce{};  // with the hello, what the frame keys come from
};
// `hello` and `hello_bytes` are what this side sent (the proofs cover the bytes).
Result<ClientProofStep> answerServerHello(const uint8_t* reply_bytes, const wire::ClientHello& hello,
                                          const uint8_t* hello_bytes, const std::string& secret,
                                          const std::string& peer);

// Server, after the client's proof: send `verdict`, then return `outcome`.
struct VerdictStep {
  std::array<uint8_t, wire::kServerVerdictSize> verdict{};
  Status outcome;
};
Result<VerdictStep> judgeClientProof(const uint8_t* proof_bytes, const ServerHelloStep& answered,
                                     const std::string& secret, const std::string& peer);

// Client, last step: OK when the server accepted our proof.
Status checkServerVerdict(const uint8_t* verdict_bytes, const std::string& peer);

}  // namespace poseidon::transport
