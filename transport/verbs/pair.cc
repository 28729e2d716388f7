#include "transport/verbs/pair.h"

#include <arpa/inet.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "transport/common/block_pool.h"
#include "transport/common/slices.h"
#include "transport/verbs/device.h"
#include "transport/verbs/explicit_gid.h"
#include "transport/wire/frame.h"

namespace poseidon::transport::verbs {
namespace {

// wr_id: the kind in the top 4 bits, a ring slot or an operation id below.
enum WrKind : uint64_t { kRecvWr = 1, kControlWr = 2, kWriteWr = 3 };
constexpr int kKindShift = 60;
constexpr uint64_t kIndexMask = (uint64_t{1} << kKindShift) - 1;
uint64_t wrId(WrKind kind, uint64_t index) { return (uint64_t{kind} << kKindShift) | index; }

}  // namespace

VerbsPair::VerbsPair(VerbsDevice& device, uint64_t context_id, int self_rank, int peer_rank)
    : PairBase(peer_rank, device.options().waiters_drive ? &device : nullptr),
      device_(device),
      context_id_(context_id),
      self_rank_(self_rank),
      recv_ring_(kRingSlots * kControlSize),
      send_ring_(kRingSlots * kControlSize) {}

VerbsPair::~VerbsPair() {
  if (id_ == nullptr) return;
  disconnect();
  device_.unregisterPair(qpNum());
  fail(makeStatus(StatusCode::kConnectionError, "the context was closed"));
  if (own_qp_) {
    ibv_destroy_qp(qp_);
  } else {
    rdma_destroy_qp(id_);
  }
  rdma_destroy_id(id_);
}

uint32_t VerbsPair::qpNum() const { return qp_ ? qp_->qp_num : 0; }

Status VerbsPair::createQueuePair(rdma_cm_id* id, bool passive, std::function<void()> on_ready, bool own_qp) {
  auto recv_mr = VerbsMemoryRegion::create(device_.pd(), recv_ring_.data(), recv_ring_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!recv_mr) return recv_mr.status();
  auto send_mr = VerbsMemoryRegion::create(device_.pd(), send_ring_.data(), send_ring_.size(), IBV_ACCESS_LOCAL_WRITE);
  if (!send_mr) return send_mr.status();
  recv_ring_mr_ = std::move(*recv_mr);
  send_ring_mr_ = std::move(*send_mr);

  ibv_qp_init_attr attr{};
  attr.send_cq = device_.cq();
  attr.recv_cq = device_.cq();
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 1;
  attr.cap.max_send_wr = kMaxSendWr;
  attr.cap.max_recv_wr = kRingSlots;
  attr.cap.max_send_sge = device_.maxSge();
  attr.cap.max_recv_sge = 1;
  if (!hasPeerAddress()) {
    const sockaddr* peer = rdma_get_peer_addr(id);
    if (peer) setPeerAddress(formatSockaddr(peer, sizeof(sockaddr_storage)));
  }
  const int gid_index = device_.options().gid_index;
  if (gid_index >= 0) {
    // The GID table may have changed since the device checked it (addresses come and go).
    POSEIDON_RETURN_IF_ERROR(
        checkGidIndex(id->verbs, id->port_num, gid_index, rdma_get_local_addr(id)).withContext(peerName()));
  }
  if (gid_index >= 0 || own_qp) {
    qp_ = ibv_create_qp(device_.pd(), &attr);
    if (qp_ == nullptr) return errnoStatus(StatusCode::kIoError, fmt::format("ibv_create_qp for {}", peerName()));
    own_qp_ = true;
  } else {
    if (rdma_create_qp(id, device_.pd(), &attr) != 0) {
      return errnoStatus(StatusCode::kIoError, fmt::format("rdma_create_qp for {}", peerName()));
    }
    qp_ = id->qp;
  }
  max_sge_ = std::max<uint32_t>(1, std::min(attr.cap.max_send_sge, device_.maxSge()));
  id_ = id;
  id->context = this;
  if (own_qp_) POSEIDON_RETURN_IF_ERROR(moveToInit(id, qp_, peerName()));
  on_ready_ = std::move(on_ready);
  handshake_ = passive ? HandshakeState::kAwaitHello : HandshakeState::kIdle;
  free_send_slots_.clear();
  for (uint32_t slot = kRingSlots; slot > 0; --slot) free_send_slots_.push_back(slot - 1);
  POSEIDON_RETURN_IF_ERROR(device_.registerPair(qp_->qp_num, this));
  for (uint32_t slot = 0; slot < kRingSlots; ++slot) POSEIDON_RETURN_IF_ERROR(postReceive(slot));
  return Status::ok();
}

Status VerbsPair::postReceive(uint32_t slot) {
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(recv_ring_.data() + slot * kControlSize);
  sge.length = kControlSize;
  sge.lkey = recv_ring_mr_->lkey();
  ibv_recv_wr wr{};
  wr.wr_id = wrId(kRecvWr, slot);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  const int rc = ibv_post_recv(qp_, &wr, &bad);
  if (rc != 0) return makeStatus(StatusCode::kIoError, "ibv_post_recv for {}: {}", peerName(), std::strerror(rc));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Posting

void VerbsPair::enqueueControlLocked(ControlMessage message) {
  OutboxEntry entry;
  entry.is_control = true;
  entry.control = message;
  outbox_.push_back(std::move(entry));
}

Status VerbsPair::enqueueWritesLocked(std::span<const Slice> slices, uint64_t remote_address, uint32_t rkey,
                                      const std::shared_ptr<SendOp>& op) {
  const uint64_t op_id = next_wr_op_++;
  const uint64_t max_write_bytes = device_.options().max_write_bytes;
  OutboxEntry entry;
  uint64_t entry_bytes = 0;
  auto flush_entry = [&] {
    if (entry.sges.empty()) return;
    entry.remote_address = remote_address;
    entry.rkey = rkey;
    entry.op_id = op_id;
    remote_address += entry_bytes;
    ++op->wrs_left;
    outbox_.push_back(std::move(entry));
    entry = OutboxEntry{};
    entry_bytes = 0;
  };
  for (const Slice& slice : slices) {
    const VerbsMemoryRegion* region = asVerbs(slice.region);
    if (region == nullptr) {
      return makeStatus(StatusCode::kInvalidArgument, "a slice's region was not registered with the verbs backend");
    }
    uint64_t done = 0;
    while (done < slice.length) {
      if (entry.sges.size() == max_sge_ || entry_bytes == max_write_bytes) flush_entry();
      const uint64_t take = std::min(slice.length - done, max_write_bytes - entry_bytes);
      ibv_sge sge{};
      sge.addr = reinterpret_cast<uint64_t>(slice.region->wire() + slice.offset + done);
      sge.length = static_cast<uint32_t>(take);
      sge.lkey = region->lkey();
      entry.sges.push_back(sge);
      entry_bytes += take;
      done += take;
    }
  }
  flush_entry();
  if (op->wrs_left > 0) wr_ops_[op_id] = op;
  return Status::ok();
}

int VerbsPair::postRingSend(uint32_t slot, uint32_t length) {
  ibv_sge sge{reinterpret_cast<uint64_t>(send_ring_.data() + slot * kControlSize), length, send_ring_mr_->lkey()};
  ibv_send_wr wr{};
  wr.wr_id = wrId(kControlWr, slot);
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp_, &wr, &bad);
}

void VerbsPair::drainOutboxLocked(Completions& done) {
  auto post_control = [&](ControlMessage& message) -> bool {
    const uint32_t slot = free_send_slots_.back();
    free_send_slots_.pop_back();
    message.ring_credits = reposted_unreported_;
    reposted_unreported_ = 0;
    encodeControl(message, send_ring_.data() + slot * kControlSize);
    const int rc = postRingSend(slot, kControlSize);
    if (rc != 0) {
      failLocked(makeStatus(StatusCode::kIoError, "ibv_post_send of a control message to {}: {}", peerName(),
                            std::strerror(rc)),
                 done);
      return false;
    }
    --control_credits_;
    ++sq_outstanding_;
    return true;
  };
  while (!failed()) {
    const bool room = sq_outstanding_ < kMaxSendWr && !free_send_slots_.empty();
    // Receive-ring credits go back on their own when nothing else would carry them soon; the
    // last credit is kept for exactly this, so two busy sides can never starve each other.
    if (room && reposted_unreported_ >= kRingSlots / 4 && control_credits_ >= 1 &&
        (outbox_.empty() || !outbox_.front().needsRingCredit() || control_credits_ < 2)) {
      ControlMessage credit;
      credit.type = ControlType::kRingCredit;
      if (!post_control(credit)) return;
      continue;
    }
    if (outbox_.empty() || sq_outstanding_ >= kMaxSendWr) return;
    OutboxEntry& entry = outbox_.front();
    if (entry.is_control) {
      if (control_credits_ < 2 || free_send_slots_.empty()) return;
      if (!post_control(entry.control)) return;
    } else {
      if (entry.imm && control_credits_ < 2) return;
      ibv_send_wr wr{};
      wr.wr_id = wrId(kWriteWr, entry.op_id);
      wr.opcode = entry.imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
      if (entry.imm) wr.imm_data = htonl(*entry.imm);
      wr.sg_list = entry.sges.data();
      wr.num_sge = static_cast<int>(entry.sges.size());
      wr.wr.rdma.remote_addr = entry.remote_address;
      wr.wr.rdma.rkey = entry.rkey;
      ibv_send_wr* bad = nullptr;
      const int rc = ibv_post_send(qp_, &wr, &bad);
      if (rc != 0) {
        failLocked(
            makeStatus(StatusCode::kIoError, "ibv_post_send of an RDMA write to {}: {}", peerName(), std::strerror(rc)),
            done);
        return;
      }
      ++sq_outstanding_;
      if (entry.imm) --control_credits_;
    }
    outbox_.pop_front();
  }
}

void VerbsPair::logPath() const {
  auto described = path();
  spdlog::debug("transport: {} connected over {}", peerName(),
                described ? described->toString() : described.status().toString());
}

Result<QueuePairPath> VerbsPair::path() const {
  if (qp_ == nullptr) return makeStatus(StatusCode::kInvalidArgument, "{} has no queue pair yet", peerName());
  return queryPath(qp_, id_->verbs);
}

Result<ibv_gid> VerbsPair::moveToRts(const std::optional<ibv_gid>& peer_gid) {
  if (!own_qp_) {
    return makeStatus(StatusCode::kInternal, "{}: rdma_cm drives this queue pair's states", peerName());
  }
  return verbs::moveToRts(id_, qp_, device_.options().gid_index, peer_gid ? &*peer_gid : nullptr, peerName());
}

Result<ibv_gid> VerbsPair::configuredGid() const {
  const int index = device_.options().gid_index;
  ibv_gid gid{};
  if (index < 0 || id_ == nullptr || ibv_query_gid(id_->verbs, id_->port_num, index, &gid) != 0) {
    return makeStatus(StatusCode::kIoError, "cannot read GID index {} of port {} for {}", index,
                      id_ ? id_->port_num : 0, peerName());
  }
  return gid;
}

void VerbsPair::disconnect() {
  rdma_disconnect(id_);
  if (own_qp_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
  }
}

Status VerbsPair::injectRawControl(std::span<const uint8_t> bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes.size() > kControlSize || free_send_slots_.empty() || failed()) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot inject {} bytes now", bytes.size());
  }
  const uint32_t slot = free_send_slots_.back();
  free_send_slots_.pop_back();
  std::memcpy(send_ring_.data() + slot * kControlSize, bytes.data(), bytes.size());
  if (const int rc = postRingSend(slot, static_cast<uint32_t>(bytes.size())); rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_post_send: {}", std::strerror(rc));
  }
  ++sq_outstanding_;
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------
// Pair operations

RequestPtr VerbsPair::sendv(uint32_t tag, std::span<const Slice> slices) {
  auto request = newRequest(sendLabel(tag));
  Status invalid = checks_.send(*request, slices);
  if (invalid.isOk()) invalid = stageOut(*request, slices);
  return submit(request, invalid, [&](Completions& done) {
    rendezvous_.send(tag, PendingSend::of(request, slices),
                     [&](uint64_t seq, PendingSend send, const ClearToSend& cts) {
                       startSendLocked(tag, seq, std::move(send), cts, done);
                       drainOutboxLocked(done);
                     });
  });
}

void VerbsPair::startSendLocked(uint32_t tag, uint64_t seq, PendingSend send, const ClearToSend& cts,
                                Completions& done) {
  ControlMessage message;
  message.tag = tag;
  message.seq = seq;
  message.total = send.op->bytes;
  if (send.op->bytes > cts.room) {
    message.type = ControlType::kSendError;
    enqueueControlLocked(message);
    done.push_back({send.op->request, sendExceedsRoom(*send.op->request, send.op->bytes, cts.room, peerName())});
    return;
  }
  Status st = enqueueWritesLocked(std::span<const Slice>(send.slices.data(), send.slices.size()), cts.address, cts.rkey,
                                  send.op);
  if (!st.isOk()) {
    failRequest(done, send.op->request, st);
    return;
  }
  message.type = ControlType::kDone;
  enqueueControlLocked(message);
  if (send.op->wrs_left == 0) sentLocked(done, send.op->request, 0);
}

RequestPtr VerbsPair::recv(uint32_t tag, MemoryRegion& region, uint64_t offset, uint64_t length) {
  auto request = newRequest(recvLabel(tag));
  return submit(request, checks_.recv(*request, region, offset, length), [&](Completions& done) {
    ControlMessage cts;
    cts.type = ControlType::kClearToSend;
    cts.tag = tag;
    cts.seq = rendezvous_.post(tag, PostedRecv{request, length, &region, offset});
    cts.total = length;
    cts.address = reinterpret_cast<uint64_t>(region.wire() + offset);
    cts.rkey = asVerbs(&region)->rkey();  // checks_ refused regions of other backends
    enqueueControlLocked(cts);
    drainOutboxLocked(done);
  });
}

RequestPtr VerbsPair::write(const MemoryRegion& local, uint64_t local_offset, const RemoteDescriptor& remote,
                            uint64_t remote_offset, uint64_t length, uint32_t imm) {
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
    const Slice slice{&local, local_offset, length};
    Status st = enqueueWritesLocked(std::span<const Slice>(&slice, 1), remote.address + remote_offset, remote.key, op);
    if (!st.isOk()) {
      failRequest(done, request, st);
      return;
    }
    if (remote.staged) {
      // The target copies the range to its device when the notice arrives, which RC delivers
      // after the WRITEs before it landed; the immediate rides along.
      ControlMessage notice;
      notice.type = ControlType::kStagedWrite;
      notice.tag = imm;
      notice.address = remote.address + remote_offset;
      notice.rkey = remote.key;
      notice.total = length;
      enqueueControlLocked(notice);
      if (op->wrs_left == 0) sentLocked(done, request, 0);
      drainOutboxLocked(done);
      return;
    }
    if (op->wrs_left > 1) {
      // The target learns a WRITE WITH IMM's length only, not the whole write's: a notice
      // after the WRITEs names it, with the immediate.
      ControlMessage notice;
      notice.type = ControlType::kSplitWrite;
      notice.tag = imm;
      notice.total = length;
      enqueueControlLocked(notice);
      drainOutboxLocked(done);
      return;
    }
    if (op->wrs_left == 0) {
      // A zero-byte write is one empty RDMA WRITE WITH IMM: the immediate alone.
      OutboxEntry empty;
      empty.remote_address = remote.address + remote_offset;
      empty.rkey = remote.key;
      empty.op_id = next_wr_op_++;
      ++op->wrs_left;
      wr_ops_[empty.op_id] = op;
      outbox_.push_back(std::move(empty));
    }
    outbox_.back().imm = imm;  // the last WRITE of this op: the peer is told once all landed
    drainOutboxLocked(done);
  });
}

// ---------------------------------------------------------------------------------------------
// Completions and control messages (engine thread)

void VerbsPair::onWorkCompletion(const ibv_wc& wc) {
  const auto kind = static_cast<WrKind>(wc.wr_id >> kKindShift);
  const uint64_t index = wc.wr_id & kIndexMask;
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed()) return;  // flushed work requests of a broken connection
    if (wc.status != IBV_WC_SUCCESS) {
      failLocked(makeStatus(StatusCode::kConnectionError, "{}: work completion error '{}' (status {}, vendor 0x{:x})",
                            peerName(), ibv_wc_status_str(wc.status), static_cast<int>(wc.status), wc.vendor_err),
                 done);
    } else if (kind == kRecvWr) {
      Status st;
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        // A one-sided write landed (RC places its data before this completion).
        st = handshake_ == HandshakeState::kAwaitHello || handshake_ == HandshakeState::kAwaitProof
                 ? makeStatus(StatusCode::kProtocolError, "{} wrote into our memory before the handshake finished",
                              peerName())
                 : landedLocked(wc.byte_len, ntohl(wc.imm_data), done);
      } else {
        const uint8_t* bytes = recv_ring_.data() + index * kControlSize;
        auto message = decodeControl(bytes, wc.byte_len, peerName());
        st = message ? onControlLocked(*message, done) : message.status();
      }
      if (st.isOk()) st = postReceive(static_cast<uint32_t>(index));
      if (!st.isOk()) {
        // A refused handshake leaves its verdict queued: send it, and keep the queue pair up
        // so it arrives; the peer closes once it has read why.
        if (st.code() == StatusCode::kAuthError) {
          drainOutboxLocked(done);
          keep_connection_ = true;
        }
        failLocked(st, done);
      } else {
        ++reposted_unreported_;
      }
    } else if (kind == kControlWr) {
      --sq_outstanding_;
      free_send_slots_.push_back(static_cast<uint32_t>(index));
    } else if (kind == kWriteWr) {
      --sq_outstanding_;
      auto it = wr_ops_.find(index);
      if (it != wr_ops_.end() && --it->second->wrs_left == 0) {
        sentLocked(done, it->second->request, it->second->bytes);
        wr_ops_.erase(it);
      }
    }
    if (!failed()) drainOutboxLocked(done);
  }
  const bool became_failed = failed();
  completeAll(done);
  if (became_failed) {
    if (id_ && !keep_connection_) disconnect();
    if (on_ready_) on_ready_();
  }
}

Status VerbsPair::onControlLocked(const ControlMessage& m, Completions& done) {
  if (m.ring_credits > kRingSlots || control_credits_ + m.ring_credits > kRingSlots) {
    return makeStatus(StatusCode::kProtocolError, "{} returned {} ring credits with {} outstanding of {}", peerName(),
                      m.ring_credits, control_credits_, kRingSlots);
  }
  control_credits_ += m.ring_credits;
  // The accepting side takes nothing but the handshake until the peer proved the secret. (The
  // connecting side may see the peer's first messages before its own handshake call returns.)
  const bool proving = handshake_ == HandshakeState::kAwaitHello || handshake_ == HandshakeState::kAwaitProof;
  if (m.type != ControlType::kHandshake && m.type != ControlType::kRingCredit && proving) {
    return makeStatus(StatusCode::kProtocolError, "{} sent a {} control message before the handshake finished",
                      peerName(), static_cast<int>(m.type));
  }
  switch (m.type) {
    case ControlType::kRingCredit: return Status::ok();
    case ControlType::kHandshake: return onHandshakeLocked(m);
    case ControlType::kClearToSend:
      // The send it clears is written out by the drain that follows every work completion.
      return rendezvous_.onRoom(m.tag, m.seq, ClearToSend{m.address, m.rkey, m.total},
                                [&](uint64_t seq, PendingSend send, const ClearToSend& cts) {
                                  startSendLocked(m.tag, seq, std::move(send), cts, done);
                                });
    case ControlType::kDone:
    case ControlType::kSendError: {
      auto finished = rendezvous_.takePosted(m.tag, m.seq);
      if (!finished) {
        return makeStatus(StatusCode::kProtocolError, "{} finished message {} on tag {}, which was never posted",
                          peerName(), m.seq, m.tag);
      }
      const PostedRecv& posted = *finished;
      if (m.type == ControlType::kSendError) {
        done.push_back({posted.request, receiveExceedsRoom(*posted.request, peerName(), m.total, posted.room)});
        return Status::ok();
      }
      if (m.total > posted.room) {
        return makeStatus(StatusCode::kProtocolError, "{} reported a message of {} bytes on tag {} into {} bytes",
                          peerName(), m.total, m.tag, posted.room);
      }
      // A failed copy to the device leaves the message undeliverable: the pair fails with it,
      // and so does this receive, which the pair no longer holds.
      Status landed = posted.region->stageIn(posted.offset, m.total);
      if (!landed.isOk()) {
        landed = landed.withContext(fmt::format("landing message {} on tag {} in device memory", m.seq, m.tag));
        failRequest(done, posted.request, landed);
        return landed;
      }
      receivedLocked(done, posted.request, m.total);
      return Status::ok();
    }
    case ControlType::kStagedWrite:
      POSEIDON_RETURN_IF_ERROR(onStagedWriteLocked(m));
      return landedLocked(m.total, m.tag, done);
    case ControlType::kSplitWrite:
      // Its WRITEs landed before it (RC order); nothing to copy, only the length to count.
      return landedLocked(m.total, m.tag, done);
  }
  return makeStatus(StatusCode::kInternal, "unhandled control type {}", static_cast<int>(m.type));
}

Status VerbsPair::onStagedWriteLocked(const ControlMessage& m) {
  // Inside use(): the region may be deregistering meanwhile (then the notice names no region).
  Status landed;
  bool fits = false;
  uint64_t base = 0;
  uint64_t region_bytes = 0;
  const auto entry = device_.stagedRegions()->find(m.rkey);
  const bool registered = entry != nullptr && entry->use([&](const MemoryRegion& region) {
    base = reinterpret_cast<uint64_t>(region.wire());
    region_bytes = region.size();
    fits = m.address >= base && region.contains(m.address - base, m.total);
    if (fits) landed = region.stageIn(m.address - base, m.total);
  });
  if (!registered) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent a staged-write notice for rkey 0x{:x}, which is no staged region here", peerName(),
                      m.rkey);
  }
  if (!fits) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent a staged-write notice for {} bytes at 0x{:x} under rkey 0x{:x}, outside that region "
                      "[0x{:x}, +{})",
                      peerName(), m.total, m.address, m.rkey, base, region_bytes);
  }
  if (landed.isOk()) return landed;
  return landed.withContext(fmt::format("landing a write of {} bytes from {} in device memory", m.total, peerName()));
}

// ---------------------------------------------------------------------------------------------
// Failure

void VerbsPair::failLocked(const Status& cause, Completions& done) {
  if (!markFailedLocked(cause)) return;
  rendezvous_.failAll(cause, done);
  const size_t before_notifications = done.size();
  imms_.failWaiters(cause, done);
  const size_t notifications = done.size() - before_notifications;
  for (auto& [id, op] : wr_ops_) failRequest(done, op->request, cause);
  wr_ops_.clear();
  outbox_.clear();
  handshake_cv_.notify_all();
  logFailure(done.size() - notifications, notifications, cause);
}

void VerbsPair::fail(Status cause) {
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failLocked(cause, done);
  }
  completeAll(done);
  if (on_ready_) on_ready_();
}

}  // namespace poseidon::transport::verbs
