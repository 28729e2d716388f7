// Rendezvous: the bookkeeping of two-sided messages, the same in every backend whatever carries
// the payload.
//
// Each message on a (pair, tag) has a sequence number, counted separately by the sender (sendv)
// and by the receiver (recv), so the n-th send on a tag meets the n-th receive. A receive posts
// room and tells the sender about it (TCP: a credit; verbs: a clear-to-send with address and
// rkey); the sender transmits message (tag, seq) only with that room in hand, so the payload
// lands straight in posted memory and nothing unexpected is ever buffered. Either side may come
// first: a send waits for its room, or a room that arrived early waits for its send.
//
// What it leaves to the backend is how rooms and payload travel. `Room` is what a sender needs
// to transmit (TCP: the room's size; verbs: address, rkey and size); `Posted` is the receiver's
// record of a posted receive (its `request` and whatever the backend needs to land the data);
// `Op` is the sender's operation (its `request` and `bytes`).
//
// The peer is trusted with nothing: its rooms must arrive in order on each tag, and it can make
// us hold only a bounded number of rooms no send has claimed yet. Not thread-safe: the owning
// Pair calls it under its lock.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "transport/common/completion.h"
#include "transport/common/slices.h"
#include "transport/pair.h"

namespace poseidon::transport {

// A send waiting for the receiver's room: the operation and the slices still to transmit.
template <typename Op>
struct PendingSend {
  std::shared_ptr<Op> op;
  std::vector<Slice> slices;

  // The message `request` sends as `slices`, with a new operation of its total length.
  static PendingSend of(const RequestPtr& request, std::span<const Slice> slices) {
    auto op = std::make_shared<Op>();
    op->request = request;
    op->bytes = totalLength(slices);
    return {std::move(op), std::vector<Slice>(slices.begin(), slices.end())};
  }
};

// How a backend's protocol names a grant of room, for the messages that report a peer breaking
// the rules: TCP {"credit", "credits"}, verbs {"clear-to-send", "receives"}.
struct RoomNames {
  const char* grant;   // one grant: "sent credit 3 on tag 7, expected 2"
  const char* unused;  // what piles up unclaimed: "granted more than 1048576 unused credits"
};

// The sender's status for a message larger than the room `receiver` posted: never truncated.
inline Status sendExceedsRoom(const Request& send, uint64_t bytes, uint64_t room, const std::string& receiver) {
  return makeStatus(StatusCode::kInvalidArgument, "{}: message of {} bytes exceeds the {} bytes {} posted", send.what(),
                    bytes, room, receiver);
}

// The receiver's status when `sender` reported that its message did not fit the posted room.
inline Status receiveExceedsRoom(const Request& recv, const std::string& sender, uint64_t bytes, uint64_t room) {
  return makeStatus(StatusCode::kInvalidArgument, "{}: {} sent a message of {} bytes, larger than the {} bytes posted",
                    recv.what(), sender, bytes, room);
}

template <typename T>
concept HoldsRequest = requires(const T& t) {
  { t.request } -> std::convertible_to<RequestPtr>;
};

template <typename Room, HoldsRequest Posted, HoldsRequest Op>
class Rendezvous {
 public:
  using Send = PendingSend<Op>;
  static constexpr size_t kDefaultMaxUnusedRooms = size_t{1} << 20;

  // `peer` names the other side in protocol errors.
  Rendezvous(const Pair& peer, RoomNames names, size_t max_unused_rooms = kDefaultMaxUnusedRooms)
      : peer_(peer), names_(names), max_unused_rooms_(max_unused_rooms) {}

  // ---- Sender side.

  // Numbers the next message on `tag`. If its room already arrived, `start(seq, send, room)`
  // transmits it now; otherwise the send waits for onRoom().
  template <typename Start>
  void send(uint32_t tag, Send send, Start&& start) {
    const uint64_t seq = send_seq_[tag]++;
    auto room = unused_rooms_.find({tag, seq});
    if (room == unused_rooms_.end()) {
      waiting_sends_.emplace(Key{tag, seq}, std::move(send));
      return;
    }
    const Room granted = std::move(room->second);
    unused_rooms_.erase(room);
    start(seq, std::move(send), granted);
  }

  // The receiver granted `room` for message (tag, seq). The send waiting for it, if any, goes
  // through `start(seq, send, room)`; otherwise the room waits for its send. A room out of
  // order on its tag, or one too many unused rooms, is the peer's protocol error.
  template <typename Start>
  Status onRoom(uint32_t tag, uint64_t seq, const Room& room, Start&& start) {
    uint64_t& expected = room_seq_[tag];
    if (seq != expected) {
      return makeStatus(StatusCode::kProtocolError, "{} sent {} {} on tag {}, expected {}", peer_.peerName(),
                        names_.grant, seq, tag, expected);
    }
    ++expected;
    auto waiting = waiting_sends_.find({tag, seq});
    if (waiting != waiting_sends_.end()) {
      Send send = std::move(waiting->second);
      waiting_sends_.erase(waiting);
      start(seq, std::move(send), room);
      return Status::ok();
    }
    if (unused_rooms_.size() >= max_unused_rooms_) {
      return makeStatus(StatusCode::kProtocolError, "{} granted more than {} unused {}", peer_.peerName(),
                        max_unused_rooms_, names_.unused);
    }
    unused_rooms_.emplace(Key{tag, seq}, room);
    return Status::ok();
  }

  // ---- Receiver side.

  // Records a posted receive; returns its sequence number on `tag`, to name in the room's grant.
  uint64_t post(uint32_t tag, Posted posted) {
    const uint64_t seq = recv_seq_[tag]++;
    posted_.emplace(Key{tag, seq}, std::move(posted));
    return seq;
  }
  // The posted receive for message (tag, seq), or null if there is none (the peer's error).
  Posted* findPosted(uint32_t tag, uint64_t seq) {
    auto it = posted_.find({tag, seq});
    return it == posted_.end() ? nullptr : &it->second;
  }
  // Removes and returns the posted receive for message (tag, seq), once it finished.
  std::optional<Posted> takePosted(uint32_t tag, uint64_t seq) {
    auto it = posted_.find({tag, seq});
    if (it == posted_.end()) return std::nullopt;
    Posted posted = std::move(it->second);
    posted_.erase(it);
    return posted;
  }

  // ---- Failure: every send still waiting for room and every posted receive fails with `cause`.
  void failAll(const Status& cause, Completions& done) {
    for (auto& [key, send] : waiting_sends_) failRequest(done, send.op->request, cause);
    waiting_sends_.clear();
    for (auto& [key, posted] : posted_) failRequest(done, posted.request, cause);
    posted_.clear();
  }

 private:
  using Key = std::pair<uint32_t, uint64_t>;  // (tag, seq)

  const Pair& peer_;
  const RoomNames names_;
  const size_t max_unused_rooms_;
  // Sender side.
  std::unordered_map<uint32_t, uint64_t> send_seq_;  // next message number per tag
  std::unordered_map<uint32_t, uint64_t> room_seq_;  // next room expected per tag
  std::map<Key, Send> waiting_sends_;                // sends whose room has not arrived
  std::map<Key, Room> unused_rooms_;                 // rooms that arrived before their send
  // Receiver side.
  std::unordered_map<uint32_t, uint64_t> recv_seq_;  // next receive number per tag
  std::map<Key, Posted> posted_;
};

}  // namespace poseidon::transport
