#include "transport/verbs/handshake.h"

#include <cstring>

#include "transport/common/handshake_steps.h"
#include "transport/verbs/device.h"
#include "transport/verbs/pair.h"

namespace poseidon::transport::verbs {

ControlMessage handshakeMessage(const uint8_t* bytes, size_t length) {
  ControlMessage m;
  m.type = ControlType::kHandshake;
  m.payload_length = static_cast<uint8_t>(length);
  std::memcpy(m.payload.data(), bytes, length);
  return m;
}

Status checkHandshakeLength(const ControlMessage& m, size_t expected, const char* what, const std::string& peer) {
  if (m.payload_length != expected) {
    return makeStatus(StatusCode::kProtocolError, "{}: handshake {} of {} bytes, expected {}", peer, what,
                      m.payload_length, expected);
  }
  return Status::ok();
}

Status VerbsPair::onHandshakeLocked(const ControlMessage& m) {
  const std::string& secret = device_.options().secret;
  switch (handshake_) {
    case HandshakeState::kIdle:
      // Active side: clientHandshake() is waiting for this.
      handshake_inbox_.push_back(m);
      handshake_cv_.notify_all();
      return Status::ok();
    case HandshakeState::kAwaitHello: {
      POSEIDON_RETURN_IF_ERROR(checkHandshakeLength(m, wire::kClientHelloSize, "hello", peerName()));
      // A pair is made for one peer: the hello must name this context and the two ranks.
      auto admit = [&](const wire::ClientHello& hello) {
        const bool ours = hello.context_id == context_id_ && static_cast<int>(hello.src_rank) == peerRank() &&
                          static_cast<int>(hello.dst_rank) == self_rank_;
        return ours ? wire::Verdict::kAccepted : wire::Verdict::kUnknownPeer;
      };
      auto answered = answerClientHello(m.payload.data(), secret, admit, peerName());
      if (!answered) return answered.status();
      enqueueControlLocked(handshakeMessage(answered->reply.data(), answered->reply.size()));
      POSEIDON_RETURN_IF_ERROR(answered->refusal);
      answered_ = std::move(*answered);
      handshake_ = HandshakeState::kAwaitProof;
      return Status::ok();
    }
    case HandshakeState::kAwaitProof: {
      POSEIDON_RETURN_IF_ERROR(checkHandshakeLength(m, wire::kClientProofSize, "proof", peerName()));
      auto judged = judgeClientProof(m.payload.data(), *answered_, secret, peerName());
      if (!judged) return judged.status();
      enqueueControlLocked(handshakeMessage(judged->verdict.data(), judged->verdict.size()));
      POSEIDON_RETURN_IF_ERROR(judged->outcome);
      handshake_ = HandshakeState::kDone;
      ready_.store(true, std::memory_order_release);
      logPath();
      if (on_ready_) on_ready_();
      return Status::ok();
    }
    case HandshakeState::kDone:
      return makeStatus(StatusCode::kProtocolError, "{} sent a handshake message after the handshake", peerName());
  }
  return Status::ok();
}

Status VerbsPair::clientHandshake(const std::string& secret, Deadline deadline) {
  auto await = [&](size_t expected_size, const char* what) -> Result<ControlMessage> {
    std::unique_lock<std::mutex> lock(mutex_);
    while (handshake_inbox_.empty() && !failed()) {
      if (handshake_cv_.wait_until(lock, deadline.at()) == std::cv_status::timeout && handshake_inbox_.empty()) {
        return makeStatus(StatusCode::kTimeout, "timed out waiting for the {} of {}", what, peerName());
      }
    }
    if (handshake_inbox_.empty()) return failure_;
    ControlMessage m = handshake_inbox_.front();
    handshake_inbox_.pop_front();
    POSEIDON_RETURN_IF_ERROR(checkHandshakeLength(m, expected_size, what, peerName()));
    return m;
  };
  auto send = [&](const uint8_t* bytes, size_t length) {
    Completions done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      enqueueControlLocked(handshakeMessage(bytes, length));
      // Handshake messages flow before ready(): post them directly.
      drainOutboxLocked(done);
    }
    completeAll(done);
  };

  // One queue pair per peer: stream 0 of 1.
  const wire::ClientHello hello =
      newClientHello(context_id_, static_cast<uint32_t>(self_rank_), static_cast<uint32_t>(peerRank()), 0, 1);
  const auto hello_bytes = wire::encodeClientHello(hello);
  send(hello_bytes.data(), hello_bytes.size());

  auto reply = await(wire::kServerHelloSize, "handshake reply");
  if (!reply) return reply.status();
  auto proof = answerServerHello(reply->payload.data(), hello, hello_bytes.data(), secret, peerName());
  if (!proof) return proof.status();
  send(proof->proof.data(), proof->proof.size());
  POSEIDON_RETURN_IF_ERROR(proof->server_proof);

  auto verdict = await(wire::kServerVerdictSize, "handshake verdict");
  if (!verdict) return verdict.status();
  POSEIDON_RETURN_IF_ERROR(checkServerVerdict(verdict->payload.data(), peerName()));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    handshake_ = HandshakeState::kDone;
    ready_.store(true, std::memory_order_release);
  }
  logPath();
  return Status::ok();
}

}  // namespace poseidon::transport::verbs
