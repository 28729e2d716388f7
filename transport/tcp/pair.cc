#include "transport/tcp/pair.h"

#include <sys/epoll.h>

#include <algorithm>

#include "transport/common/block_pool.h"
#include "transport/common/slices.h"
#include "transport/tcp/context.h"
#include "transport/wire/crc32c.h"

namespace poseidon::transport::tcp {
namespace {
// Writes a peer may have in flight beyond the next one to notify, so a misbehaving peer cannot
// make us hold partial writes without limit. (Rooms and immediates: rendezvous.h, imm_queue.h.)
constexpr uint64_t kMaxWritesInFlight = 1u << 20;
}  // namespace

TcpPair::TcpPair(TcpContext& context, int peer_rank, const DeviceOptions& options, ProgressEngine& engine,
                 SendBudget* budget)
    : PairBase(peer_rank, options.waiters_drive ? &engine : nullptr),
      context_(context),
      options_(options),
      engine_(engine),
      budget_(budget) {
  streams_.resize(static_cast<size_t>(options.streams));
}

TcpPair::~TcpPair() {
  // Stop the engine from calling into our streams before anything is torn down.
  for (auto& stream : streams_) {
    if (stream) engine_.cancelWake(stream.get());
    if (stream && active_) engine_.remove(stream->fd());
  }
  fail(makeStatus(StatusCode::kConnectionError, "context '{}' was closed", context_.name()));
}

Status TcpPair::attachStream(int index, Fd fd, const std::string& peer_address, const wire::FrameKeys& keys,
                             bool connected) {
  StreamCiphers ciphers;
  if (options_.encrypt_frames) {
    const wire::FrameKey& send_key = connected ? keys.client_to_server : keys.server_to_client;
    const wire::FrameKey& receive_key = connected ? keys.server_to_client : keys.client_to_server;
    auto seal = wire::FrameCipher::create(send_key, wire::FrameCipher::Direction::kSeal);
    if (!seal) return seal.status();
    auto open = wire::FrameCipher::create(receive_key, wire::FrameCipher::Direction::kOpen);
    if (!open) return open.status();
    ciphers = {std::move(*seal), std::move(*open)};
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (!hasPeerAddress()) setPeerAddress(peer_address);
  wire::DecodeLimits limits;
  limits.max_payload = options_.max_frame_payload;
  streams_[static_cast<size_t>(index)] =
      std::make_unique<Stream>(*this, index, std::move(fd), peer_address, limits, std::move(ciphers));
  return Status::ok();
}

bool TcpPair::hasAllStreams() const { return missingStreams().empty(); }

std::vector<int> TcpPair::missingStreams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> missing;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!streams_[i]) missing.push_back(static_cast<int>(i));
  }
  return missing;
}

Status TcpPair::activate() {
  std::lock_guard<std::mutex> lock(mutex_);
  writes_through_stream_.assign(streams_.size(), 0);
  for (auto& stream : streams_) {
    POSEIDON_RETURN_IF_ERROR(setNonBlocking(stream->fd(), true));
    POSEIDON_RETURN_IF_ERROR(engine_.add(stream->fd(), stream.get(), EPOLLIN));
  }
  active_ = true;
  return Status::ok();
}

void TcpPair::flushAllLocked(Completions& done) {
  for (auto& stream : streams_) stream->flushLocked(done);
}

void TcpPair::enqueueControlLocked(const wire::FrameHeader& prototype) {
  wire::FrameHeader header = prototype;
  OutFrame frame;
  frame.size = wire::kFrameHeaderSize;
  if (options_.encrypt_frames) {
    header.flags |= wire::kFlagSealed;
    frame.size += wire::kFrameTagSize;
  }
  wire::encodeHeader(header, frame.header.data());
  streams_[0]->enqueueControlLocked(std::move(frame));
}

void TcpPair::enqueuePiecesLocked(const wire::FrameHeader& prototype, uint64_t base_offset,
                                  std::span<const Slice> slices, const std::shared_ptr<SendOp>& op,
                                  std::optional<uint32_t> known_crc) {
  const uint64_t total = totalLength(slices);
  const uint64_t stripe = options_.stripe_bytes;
  const uint64_t pieces = total == 0 ? 1 : (total + stripe - 1) / stripe;
  op->frames_left = pieces;
  // A sealed frame's tag covers its payload: a CRC would add nothing.
  const bool crc_payloads = options_.payload_crc && !options_.encrypt_frames;
  // The caller's CRC covers the whole payload, so only a payload of one frame can use it.
  const bool crc_known = crc_payloads && known_crc.has_value() && pieces == 1;
  size_t slice_index = 0;
  uint64_t slice_offset = 0;
  for (uint64_t p = 0; p < pieces; ++p) {
    const uint64_t piece_offset = p * stripe;
    const uint64_t piece_length = std::min(stripe, total - piece_offset);
    OutFrame frame;
    frame.op = op;
    uint64_t need = piece_length;
    uint32_t crc = 0;
    while (need > 0) {
      const Slice& s = slices[slice_index];
      const uint64_t take = std::min(need, s.length - slice_offset);
      if (take > 0) {
        uint8_t* base = s.region->wire() + s.offset + slice_offset;
        frame.payload.push_back({base, take});
        if (crc_payloads && !crc_known) crc = wire::crc32c(base, take, crc);
      }
      need -= take;
      slice_offset += take;
      if (slice_offset == s.length) {
        ++slice_index;
        slice_offset = 0;
      }
    }
    wire::FrameHeader header = prototype;
    header.length = static_cast<uint32_t>(piece_length);
    header.offset = base_offset + piece_offset;
    frame.size = wire::kFrameHeaderSize + piece_length;
    if (crc_payloads) {
      header.flags |= wire::kFlagPayloadCrc;
      header.payload_crc = crc_known ? *known_crc : crc;
    } else if (options_.encrypt_frames) {
      header.flags |= wire::kFlagSealed;
      frame.size += wire::kFrameTagSize;
    }
    wire::encodeHeader(header, frame.header.data());
    streams_[next_stream_]->enqueueLocked(std::move(frame));
    next_stream_ = (next_stream_ + 1) % streams_.size();
  }
}

RequestPtr TcpPair::sendv(uint32_t tag, std::span<const Slice> slices) {
  auto request = newRequest(sendLabel(tag));
  Status invalid = checks_.send(*request, slices);
  if (invalid.isOk()) invalid = stageOut(*request, slices);
  return submit(request, invalid, [&](Completions& done) {
    rendezvous_.send(tag, PendingSend::of(request, slices), [&](uint64_t seq, PendingSend send, uint64_t room) {
      startSendLocked(tag, seq, std::move(send), room, done);
      flushAllLocked(done);
    });
  });
}

void TcpPair::startSendLocked(uint32_t tag, uint64_t seq, PendingSend send, uint64_t room, Completions& done) {
  wire::FrameHeader header;
  header.tag = tag;
  header.seq = seq;
  header.total = send.op->bytes;
  if (send.op->bytes > room) {
    // Never truncate: fail both sides of this message and keep the connection.
    header.type = wire::FrameType::kSendError;
    enqueueControlLocked(header);
    done.push_back({send.op->request, sendExceedsRoom(*send.op->request, send.op->bytes, room, peerName())});
    return;
  }
  header.type = wire::FrameType::kData;
  enqueuePiecesLocked(header, 0, std::span<const Slice>(send.slices.data(), send.slices.size()), send.op);
}

RequestPtr TcpPair::recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) {
  auto request = newRequest(recvLabel(tag));
  return submit(request, checks_.recv(*request, region, offset, length), [&](Completions& done) {
    PostedRecv posted;
    posted.request = request;
    posted.region = &region;
    posted.offset = offset;
    posted.room = length;
    wire::FrameHeader credit;
    credit.type = wire::FrameType::kCredit;
    credit.tag = tag;
    credit.seq = rendezvous_.post(tag, std::move(posted));
    credit.total = length;
    enqueueControlLocked(credit);
    streams_[0]->flushLocked(done);
  });
}

RequestPtr TcpPair::write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                          uint64_t remote_offset, uint64_t length, uint32_t imm) {
  return writeFrom(local, local_offset, remote, remote_offset, length, imm, std::nullopt);
}

RequestPtr TcpPair::writeWithCrc(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                                 uint64_t remote_offset, uint64_t length, uint32_t imm, uint32_t payload_crc32c) {
  // Device memory goes out from its host staging copy: the caller's CRC is of other bytes.
  std::optional<uint32_t> known;
  if (!local.staged()) known = payload_crc32c;
  return writeFrom(local, local_offset, remote, remote_offset, length, imm, known);
}

bool TcpPair::takesPayloadCrc(uint64_t length) const {
  return options_.payload_crc && !options_.encrypt_frames && length > 0 && length <= options_.stripe_bytes;
}

RequestPtr TcpPair::writeFrom(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                              uint64_t remote_offset, uint64_t length, uint32_t imm,
                              std::optional<uint32_t> known_crc) {
  auto request = newRequest(writeLabel(length, remote.key));
  Status invalid = checks_.write(*request, local, local_offset, remote, remote_offset, length);
  if (invalid.isOk()) {
    invalid = local.stageOut(local_offset, length);
    if (!invalid.isOk()) invalid = invalid.withContext(request->what());
  }
  return submit(request, invalid, [&](Completions& done) {
    auto op = std::allocate_shared<SendOp>(PoolAllocator<SendOp>());
    op->request = request;
    op->bytes = length;
    wire::FrameHeader header;
    header.type = wire::FrameType::kWrite;
    header.tag = remote.key;
    header.seq = write_seq_++;
    header.total = length;
    header.imm = imm;
    const Slice slice{&local, local_offset, length};
    enqueuePiecesLocked(header, remote_offset, std::span<const Slice>(&slice, 1), op, known_crc);
    flushAllLocked(done);
  });
}

Result<PayloadDestination> TcpPair::onFrameHeader(const wire::FrameHeader& h) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (h.type) {
    case wire::FrameType::kCredit:
    case wire::FrameType::kSendError: return PayloadDestination{};
    case wire::FrameType::kData: {
      PostedRecv* found = rendezvous_.findPosted(h.tag, h.seq);
      if (found == nullptr) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} sent data for message {} on tag {} without a posted receive (credit violated)",
                          peerName(), h.seq, h.tag);
      }
      PostedRecv& posted = *found;
      if (h.total > posted.room) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} sent a message of {} bytes on tag {} into a posted receive of {} bytes", peerName(),
                          h.total, h.tag, posted.room);
      }
      if (posted.started && h.total != posted.total) {
        return makeStatus(StatusCode::kProtocolError, "{} changed the length of message {} on tag {} from {} to {}",
                          peerName(), h.seq, h.tag, posted.total, h.total);
      }
      posted.started = true;
      posted.total = h.total;
      return PayloadDestination{posted.region->wire() + posted.offset + h.offset, nullptr};
    }
    case wire::FrameType::kWrite: {
      PayloadDestination dest{nullptr, context_.findRegion(h.tag)};
      uint64_t region_bytes = 0;
      bool fits = false;
      const bool registered = dest.region != nullptr && dest.region->use([&](const MemoryRegion& region) {
        region_bytes = region.size();
        fits = region.contains(h.offset, h.length);
        if (fits) dest.bytes = region.wire() + h.offset;
      });
      if (!registered) {
        return makeStatus(StatusCode::kProtocolError, "{} wrote into region key {}, which is not registered here",
                          peerName(), h.tag);
      }
      if (!fits) {
        return makeStatus(StatusCode::kProtocolError,
                          "{} wrote {} bytes at offset {} of region key {}, outside its {} bytes", peerName(), h.length,
                          h.offset, h.tag, region_bytes);
      }
      if (h.seq < next_notify_seq_ || h.seq >= next_notify_seq_ + kMaxWritesInFlight) {
        return makeStatus(StatusCode::kProtocolError, "{} sent write number {}, expected one in [{}, {})", peerName(),
                          h.seq, next_notify_seq_, next_notify_seq_ + kMaxWritesInFlight);
      }
      return dest;
    }
  }
  return makeStatus(StatusCode::kInternal, "unhandled frame type {}", static_cast<int>(h.type));
}

Status TcpPair::onFrameComplete(const wire::FrameHeader& h, int stream, RegionEntry* region) {
  Completions done;
  Status result;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    switch (h.type) {
      case wire::FrameType::kCredit:
        result = rendezvous_.onRoom(h.tag, h.seq, h.total, [&](uint64_t seq, PendingSend send, uint64_t room) {
          startSendLocked(h.tag, seq, std::move(send), room, done);
          flushAllLocked(done);
        });
        break;
      case wire::FrameType::kSendError: {
        auto posted = rendezvous_.takePosted(h.tag, h.seq);
        if (!posted) {
          result = makeStatus(StatusCode::kProtocolError, "{} reported an oversized message {} on tag {} never posted",
                              peerName(), h.seq, h.tag);
          break;
        }
        done.push_back({posted->request, receiveExceedsRoom(*posted->request, peerName(), h.total, posted->room)});
        break;
      }
      case wire::FrameType::kData: {
        // onFrameHeader checked it exists; only this thread removes it.
        PostedRecv& posted = *rendezvous_.findPosted(h.tag, h.seq);
        // Device memory behind staging gets each piece as it lands, so the receive completes
        // with all of it on the device. A failed copy is local trouble, but the message cannot
        // be delivered whole any more: the pair fails with the cause.
        result = posted.region->stageIn(posted.offset + h.offset, h.length);
        if (!result.isOk()) {
          result = result.withContext(fmt::format("landing message {} on tag {} in device memory", h.seq, h.tag));
          break;
        }
        posted.received += h.length;
        if (posted.received >= posted.total) {
          receivedLocked(done, posted.request, posted.total);
          rendezvous_.takePosted(h.tag, h.seq);
        }
        break;
      }
      case wire::FrameType::kWrite: {
        // As for kData: on the device before the immediate is delivered. The region may have been
        // deregistered since the payload landed: then the write cannot be delivered.
        const bool registered =
            region != nullptr && region->use([&](const MemoryRegion& r) { result = r.stageIn(h.offset, h.length); });
        if (!registered) {
          result = makeStatus(StatusCode::kConnectionError,
                              "region key {} was deregistered while {}'s write {} into it arrived: the write cannot "
                              "be delivered, so the pair fails",
                              h.tag, peerName(), h.seq);
          break;
        }
        if (!result.isOk()) {
          result =
              result.withContext(fmt::format("landing write {} into region key {} in device memory", h.seq, h.tag));
          break;
        }
        // onFrameHeader checked seq is within [next_notify_seq_, +kMaxWritesInFlight).
        const size_t index = static_cast<size_t>(h.seq - next_notify_seq_);
        while (incoming_writes_.size() <= index) incoming_writes_.push_back(IncomingWrite{});
        IncomingWrite& w = incoming_writes_[index];
        w.seen = true;
        w.total = h.total;
        w.imm = h.imm;
        w.received += h.length;
        if ((h.flags & wire::kFlagPayloadCrc) && h.length == h.total) w.payload_crc = h.payload_crc;
        if (w.received > w.total) {
          result = makeStatus(StatusCode::kProtocolError, "{} sent {} bytes for write {} of {} bytes", peerName(),
                              w.received, h.seq, w.total);
          break;
        }
        uint64_t& through = writes_through_stream_[static_cast<size_t>(stream)];
        through = std::max(through, h.seq + 1);
        result = deliverWritesLocked(done);
        if (result.isOk()) result = gapInWritesLocked();
        break;
      }
    }
  }
  completeAll(done);
  return result;
}

Status TcpPair::deliverWritesLocked(Completions& done) {
  // A zero-byte write arrives as one empty frame, so it is seen and complete.
  while (!incoming_writes_.empty() && incoming_writes_.front().seen &&
         incoming_writes_.front().received >= incoming_writes_.front().total) {
    const IncomingWrite landed = incoming_writes_.front();
    incoming_writes_.pop_front();
    ++next_notify_seq_;
    POSEIDON_RETURN_IF_ERROR(landedLocked(landed.total, landed.imm, done, landed.payload_crc));
  }
  return Status::ok();
}

Status TcpPair::gapInWritesLocked() {
  if (incoming_writes_.empty()) return Status::ok();
  // Each stream is FIFO, and a write's frames are queued on their streams before any frame of a
  // later write (enqueuePiecesLocked). So once every stream has carried a frame of a later write,
  // the bytes the oldest write still lacks will never come: a frame was lost or dropped on the way.
  const uint64_t slowest = *std::min_element(writes_through_stream_.begin(), writes_through_stream_.end());
  if (slowest <= next_notify_seq_ + 1) return Status::ok();
  const IncomingWrite& oldest = incoming_writes_.front();
  return makeStatus(
      StatusCode::kProtocolError,
      "a gap in the write sequence from {}: write {} is missing {} of its bytes, but every stream has "
      "since carried later writes (up to {}); a frame was lost on the way",
      peerName(), next_notify_seq_,
      oldest.seen ? fmt::format("{} of {}", oldest.total - oldest.received, oldest.total) : std::string("all"),
      slowest - 1);
}

void TcpPair::onStreamEnded(int stream) {
  size_t ended = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ended = ++ended_streams_;
  }
  if (ended < streams_.size()) return;
  fail(streams_.size() == 1
           ? makeStatus(StatusCode::kConnectionError, "{} closed the connection (stream {})", peerName(), stream)
           : makeStatus(StatusCode::kConnectionError, "{} closed the connection (all {} streams)", peerName(),
                        streams_.size()));
}

void TcpPair::fail(Status cause) {
  Completions done;
  size_t notifications = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!markFailedLocked(cause)) return;
    for (auto& stream : streams_) {
      if (!stream) continue;
      if (active_ && engine_.dispatchingHere()) {
        engine_.cancelWake(stream.get());
        engine_.remove(stream->fd());
      }
      stream->shutdownSocket();
      for (auto& frame : stream->takeQueueLocked()) {
        if (frame.op && frame.op->frames_left > 0) {
          frame.op->frames_left = 0;
          failRequest(done, frame.op->request, cause);
        }
      }
    }
    rendezvous_.failAll(cause, done);
    const size_t before_notifications = done.size();
    imms_.failWaiters(cause, done);
    notifications = done.size() - before_notifications;
  }
  logFailure(done.size() - notifications, notifications, cause);
  completeAll(done);
}

}  // namespace poseidon::transport::tcp
