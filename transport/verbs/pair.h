// VerbsPair: the verbs backend's Pair — one RC queue pair per peer, set up by rdma_cm.
//
// Payload moves only by RDMA WRITE into registered memory; small control messages (SENDs into a
// pre-posted receive ring, control.h) carry the protocol:
// - recv() sends clear-to-send (tag, seq, address, rkey, room); the sender RDMA-writes the
//   message straight into that room and then sends done (tag, seq, length). RC delivers the
//   done only after the writes landed. Too large a message: send-error, both requests fail.
// - write() RDMA-writes into the peer's region, the last WRITE carrying the immediate (RDMA WRITE
//   WITH IMM); immediates arrive in posted order and feed recvImm(). Into a staged region (GPU
//   memory behind a host copy, memory.h) the WRITEs are followed by a staged-write notice
//   instead, naming the range the target must copy to the device before the immediate. A write
//   longer than one WRITE carries (DeviceOptions::max_write_bytes) ends in a split-write notice
//   with its full length instead, which the target's traffic counters need (traffic.h).
// - the control ring has credits: each side may send as many control messages as the other
//   has receive slots posted; slots reposted are reported back in every control message.
// Every work request goes through one FIFO outbox, so a done never overtakes its writes and
// the send queue never overflows. A work completion with an error fails the pair with the
// verbs status string.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "transport/common/completion.h"
#include "transport/common/handshake_steps.h"
#include "transport/common/pair_argument_checks.h"
#include "transport/common/pair_base.h"
#include "transport/common/rendezvous.h"
#include "transport/device.h"
#include "transport/verbs/control.h"
#include "transport/verbs/memory.h"
#include "transport/verbs/path.h"

namespace poseidon::transport::verbs {

class VerbsDevice;

inline constexpr uint32_t kRingSlots = 128;
inline constexpr uint32_t kMaxSendWr = 256;

class VerbsPair final : public PairBase {
 public:
  VerbsPair(VerbsDevice& device, uint64_t context_id, int self_rank, int peer_rank);
  ~VerbsPair() override;

  // Set-up. createQueuePair() on the id rdma_cm resolved (active) or accepted (passive: the
  // peer then runs the handshake, and `on_ready` is called once it proved the secret or failed).
  // With DeviceOptions::gid_index set, or `own_qp` (the peer chose its GID), the QP is the
  // pair's own (explicit_gid.h): rdma_cm does not drive it, so the caller connects with qpNum()
  // and calls moveToRts() at the right time.
  Status createQueuePair(rdma_cm_id* id, bool passive, std::function<void()> on_ready = {}, bool own_qp = false);
  bool ownsQueuePair() const { return own_qp_; }
  // Own QP: to RTR and RTS with the configured source GID, addressing `peer_gid` when the peer
  // announced one (before rdma_accept, or after the connect response before rdma_establish).
  // Returns the GID the QP sends from, to announce to the peer.
  Result<ibv_gid> moveToRts(const std::optional<ibv_gid>& peer_gid);
  // The GID of DeviceOptions::gid_index on this pair's port, announced in the connect request.
  Result<ibv_gid> configuredGid() const;
  using PairBase::setPeerAddress;
  // Active side: runs the secret handshake over the established QP, blocking until done
  // (handshake.cc, like the passive side's onHandshakeLocked).
  Status clientHandshake(const std::string& secret, Deadline deadline);
  // Passive side: the handshake runs on the engine thread; true once the peer proved itself.
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  // Pair (peerRank, peerName, status and recvImm come from PairBase)
  RequestPtr sendv(uint32_t tag, std::span<const Slice> slices) override;
  RequestPtr recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) override;
  RequestPtr write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                   uint64_t remote_offset, uint64_t length, uint32_t imm) override;

  // The path this queue pair uses (GID index and type, MTU); after connect().
  Result<QueuePairPath> path() const;
  void logPath() const;

  // Fault injection, for tests only: sends `bytes` (at most kControlSize, possibly malformed)
  // as one control message, bypassing encoding and credits, to check what a misbehaving peer
  // gets from the other side.
  Status injectRawControl(std::span<const uint8_t> bytes);

  // Engine thread.
  void onWorkCompletion(const ibv_wc& wc);
  void fail(Status cause);
  rdma_cm_id* cmId() const { return id_; }
  uint32_t qpNum() const;

 private:
  struct SendOp {
    RequestPtr request;
    size_t wrs_left = 0;
    uint64_t bytes = 0;
  };
  // One RDMA WRITE or one control SEND, waiting in the outbox for send-queue room and credits.
  // The last WRITE of a one-sided write carries the immediate (RDMA WRITE WITH IMM), which, like
  // a control message, consumes a slot of the peer's receive ring and so needs a ring credit.
  struct OutboxEntry {
    bool is_control = false;
    ControlMessage control;
    std::vector<ibv_sge> sges;
    uint64_t remote_address = 0;
    uint32_t rkey = 0;
    uint64_t op_id = 0;
    std::optional<uint32_t> imm;
    bool needsRingCredit() const { return is_control || imm.has_value(); }
  };
  struct PostedRecv {
    RequestPtr request;
    uint64_t room = 0;
    const MemoryRegion* region = nullptr;  // staged: the message is copied to the device on done
    uint64_t offset = 0;
  };
  using PendingSend = transport::PendingSend<SendOp>;
  // The room a clear-to-send grants: where the sender RDMA-writes the message.
  struct ClearToSend {
    uint64_t address = 0;
    uint32_t rkey = 0;
    uint64_t room = 0;
  };
  enum class HandshakeState { kIdle, kAwaitHello, kAwaitProof, kDone };

  Status postReceive(uint32_t slot);
  // Posts the first `length` bytes staged in send-ring `slot` as one SEND; ibv_post_send's code.
  int postRingSend(uint32_t slot, uint32_t length);
  void enqueueControlLocked(ControlMessage message);
  Status enqueueWritesLocked(std::span<const Slice> slices, uint64_t remote_address, uint32_t rkey,
                             const std::shared_ptr<SendOp>& op);
  void drainOutboxLocked(Completions& done);
  void startSendLocked(uint32_t tag, uint64_t seq, PendingSend send, const ClearToSend& cts, Completions& done);
  Status onControlLocked(const ControlMessage& message, Completions& done);
  // A peer's write into one of our staged regions landed: copy it to the device.
  Status onStagedWriteLocked(const ControlMessage& message);
  Status onHandshakeLocked(const ControlMessage& message);
  void failLocked(const Status& cause, Completions& done);
  // rdma_disconnect, and for our own QP what rdma_cm does for its own: to the error state, so
  // outstanding work requests flush instead of retrying towards a gone peer.
  void disconnect();

  VerbsDevice& device_;
  const uint64_t context_id_;
  const int self_rank_;
  const PairArgumentChecks checks_{BackendTag::kVerbs,
                                   [](const MemoryRegion& region) { return asVerbs(&region) != nullptr; }};
  rdma_cm_id* id_ = nullptr;
  ibv_qp* qp_ = nullptr;
  bool own_qp_ = false;  // created by ibv_create_qp (explicit GID index), not rdma_create_qp
  uint32_t max_sge_ = 1;

  // Control rings: received messages land in recv_ring_, sent ones are staged in send_ring_.
  std::vector<uint8_t> recv_ring_;
  std::vector<uint8_t> send_ring_;
  std::unique_ptr<VerbsMemoryRegion> recv_ring_mr_;
  std::unique_ptr<VerbsMemoryRegion> send_ring_mr_;
  std::vector<uint32_t> free_send_slots_;

  std::condition_variable handshake_cv_;
  std::atomic<bool> ready_{false};
  bool keep_connection_ = false;  // failed by a refused handshake: let the verdict reach the peer
  uint32_t sq_outstanding_ = 0;
  uint32_t control_credits_ = kRingSlots;  // control messages the peer has room for
  uint32_t reposted_unreported_ = 0;
  std::deque<OutboxEntry> outbox_;
  uint64_t next_wr_op_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<SendOp>> wr_ops_;

  Rendezvous<ClearToSend, PostedRecv, SendOp> rendezvous_{*this, RoomNames{"clear-to-send", "receives"}};

  // Handshake.
  HandshakeState handshake_ = HandshakeState::kIdle;
  std::deque<ControlMessage> handshake_inbox_;  // active side: replies for clientHandshake()
  std::optional<ServerHelloStep> answered_;     // passive side: the hello answered, for the proof
  std::function<void()> on_ready_;
};

}  // namespace poseidon::transport::verbs
