// TcpPair: the TCP backend's Pair — message matching, credits, one-sided writes and failure.
//
// Two-sided messages use credits: recv() sends the peer a credit naming (tag, seq, room); the
// sender transmits message (tag, seq) only once it holds that credit, so every payload lands
// straight in posted memory and nothing unexpected is ever buffered. One-sided writes carry the
// region key and offset in each frame; their immediates are delivered in posted order once all
// bytes of the write have landed.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "transport/common/pair_argument_checks.h"
#include "transport/common/pair_base.h"
#include "transport/common/rendezvous.h"
#include "transport/common/ring_queue.h"
#include "transport/common/send_budget.h"
#include "transport/device.h"
#include "transport/tcp/stream.h"

namespace poseidon::transport::tcp {

class TcpContext;
class TcpMemoryRegion;

class TcpPair final : public PairBase {
 public:
  // `budget`: the device's send budget every stream draws from; nullptr: unmetered.
  TcpPair(TcpContext& context, int peer_rank, const DeviceOptions& options, ProgressEngine& engine, SendBudget* budget);
  ~TcpPair() override;

  // Set-up (before activate): streams arrive from connect() or the device's acceptor, with the
  // connection's frame keys (used when options.encrypt_frames); `connected`: this side connected.
  Status attachStream(int index, Fd fd, const std::string& peer_address, const wire::FrameKeys& keys, bool connected);
  bool hasAllStreams() const;
  std::vector<int> missingStreams() const;
  Status activate();

  // Pair (peerRank, peerName, status and recvImm come from PairBase)
  RequestPtr sendv(uint32_t tag, std::span<const Slice> slices) override;
  RequestPtr recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) override;
  RequestPtr write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                   uint64_t remote_offset, uint64_t length, uint32_t imm) override;
  RequestPtr writeWithCrc(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                          uint64_t remote_offset, uint64_t length, uint32_t imm, uint32_t payload_crc32c) override;
  bool takesPayloadCrc(uint64_t length) const override;

  // A stream, under the lock: the last frame of `op` went out, so the send or write succeeded.
  void opWrittenLocked(const SendOp& op, Completions& done) { sentLocked(done, op.request, op.bytes); }

  // Under the dispatch gate, from a stream.
  Result<PayloadDestination> onFrameHeader(const wire::FrameHeader& header);
  // `region`: a write's, from onFrameHeader.
  Status onFrameComplete(const wire::FrameHeader& header, int stream, RegionEntry* region);
  // Under the dispatch gate, from a stream the peer closed between frames: the pair fails once
  // every stream has ended (the others may still hold frames sent before the close).
  void onStreamEnded(int stream);
  // Fails every pending request with `cause` and closes the streams. Under the dispatch gate, or after
  // the streams were removed from the engine.
  void fail(Status cause);

  std::mutex& mutex() { return mutex_; }
  ProgressEngine& engine() { return engine_; }
  SendBudget* sendBudget() const { return budget_; }

 private:
  struct PostedRecv {
    RequestPtr request;
    MemoryRegion* region = nullptr;
    uint64_t offset = 0;
    uint64_t room = 0;
    uint64_t total = 0;
    uint64_t received = 0;
    bool started = false;
  };
  using PendingSend = transport::PendingSend<SendOp>;
  struct IncomingWrite {
    bool seen = false;  // a frame of it arrived
    uint64_t total = 0;
    uint64_t received = 0;
    uint32_t imm = 0;
    std::optional<uint32_t> payload_crc;  // checked, when one frame carried the whole write
  };

  // Cuts [slices] into frames of at most stripe bytes over the streams, in round-robin order.
  // `known_crc`: the payload's CRC32C from the caller, used when one checked frame carries it.
  void enqueuePiecesLocked(const wire::FrameHeader& prototype, uint64_t base_offset, std::span<const Slice> slices,
                           const std::shared_ptr<SendOp>& op, std::optional<uint32_t> known_crc = std::nullopt);
  RequestPtr writeFrom(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                       uint64_t remote_offset, uint64_t length, uint32_t imm, std::optional<uint32_t> known_crc);
  void enqueueControlLocked(const wire::FrameHeader& header);
  void startSendLocked(uint32_t tag, uint64_t seq, PendingSend send, uint64_t room, Completions& done);
  void flushAllLocked(Completions& done);
  Status deliverWritesLocked(Completions& done);
  // kProtocolError when the oldest undelivered write can no longer be completed.
  Status gapInWritesLocked();

  TcpContext& context_;
  const DeviceOptions options_;
  ProgressEngine& engine_;
  SendBudget* const budget_;
  const PairArgumentChecks checks_{BackendTag::kTcp};

  std::vector<std::unique_ptr<Stream>> streams_;
  size_t ended_streams_ = 0;  // closed by the peer between frames
  bool active_ = false;
  size_t next_stream_ = 0;

  // Two-sided messages; a room is the byte count a credit grants.
  Rendezvous<uint64_t, PostedRecv, SendOp> rendezvous_{*this, RoomNames{"credit", "credits"}};
  // One-sided writes: pieces may arrive over several streams; immediates go out in posted order.
  uint64_t write_seq_ = 0;
  uint64_t next_notify_seq_ = 0;
  RingQueue<IncomingWrite> incoming_writes_;  // writes [next_notify_seq_, ...) by seq
  // Per stream, 1 + the highest write number it carried (0: none yet), to tell a lost frame from
  // one still on its way (gapInWritesLocked).
  std::vector<uint64_t> writes_through_stream_;
};

}  // namespace poseidon::transport::tcp
