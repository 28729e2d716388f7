#include "transport/bootstrap/store_ledger.h"

#include "transport/bootstrap/store.h"

namespace poseidon::transport::bootstrap {

Status StoreLedger::checkRoom(uint64_t owner, size_t cost) const {
  const size_t total = held_ + reserved_total_ + cost;
  if (total > limits_.max_total_bytes) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "an entry of {} bytes (key, value and {} bytes of bookkeeping) would bring the store to {} "
                      "bytes, its limit is {}",
                      cost, kEntryOverheadBytes, total, limits_.max_total_bytes);
  }
  const size_t mine = ownerBytes(owner) + cost;
  if (mine > limits_.max_client_bytes) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "an entry of {} bytes would bring this connection's share of the store to {} bytes, its limit "
                      "is {}",
                      cost, mine, limits_.max_client_bytes);
  }
  return Status::ok();
}

Status StoreLedger::reserve(uint64_t owner, size_t key_bytes, size_t value_bytes) {
  const size_t cost = entryCost(key_bytes, value_bytes);
  POSEIDON_RETURN_IF_ERROR(checkRoom(owner, cost));
  unreserve(owner);
  owners_[owner].reserved = cost;
  reserved_total_ += cost;
  return Status::ok();
}

void StoreLedger::unreserve(uint64_t owner) {
  auto it = owners_.find(owner);
  if (it == owners_.end()) return;
  reserved_total_ -= it->second.reserved;
  it->second.reserved = 0;
}

void StoreLedger::charge(uint64_t owner, size_t cost) {
  held_ += cost;
  owners_[owner].held += cost;
}

void StoreLedger::uncharge(uint64_t owner, size_t cost) {
  held_ -= cost;
  if (auto it = owners_.find(owner); it != owners_.end()) it->second.held -= cost;
}

void StoreLedger::set(uint64_t owner, const std::string& key, std::vector<uint8_t> value) {
  unreserve(owner);
  auto [it, inserted] = values_.try_emplace(key);
  if (!inserted) uncharge(it->second.owner, entryCost(key.size(), it->second.value.size()));
  charge(owner, entryCost(key.size(), value.size()));
  it->second.value = std::move(value);
  it->second.owner = owner;
}

Result<int64_t> StoreLedger::add(uint64_t owner, const std::string& key, int64_t delta) {
  int64_t old_value = 0;
  auto it = values_.find(key);
  if (it != values_.end()) {
    Result<int64_t> parsed = parseCounter(key, it->second.value);
    if (!parsed) return parsed.status();
    old_value = *parsed;
  }
  Result<int64_t> sum = addCounter(key, old_value, delta);
  if (!sum) return sum;
  std::vector<uint8_t> text = formatCounter(*sum);
  if (it == values_.end()) {
    POSEIDON_RETURN_IF_ERROR(checkRoom(owner, entryCost(key.size(), text.size())));
    set(owner, key, std::move(text));
    return sum;
  }
  // An existing counter stays charged to whoever made it (its text is at most 20 bytes and may
  // grow by a digit): adds from many connections (a barrier's) do not move it into a share that
  // was never checked for it, and the adder's own reservation is left alone.
  const uint64_t maker = it->second.owner;
  uncharge(maker, entryCost(key.size(), it->second.value.size()));
  held_ += entryCost(key.size(), text.size());
  if (auto live = owners_.find(maker); live != owners_.end()) live->second.held += entryCost(key.size(), text.size());
  it->second.value = std::move(text);
  return sum;
}

const std::vector<uint8_t>* StoreLedger::find(const std::string& key) const {
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second.value;
}

void StoreLedger::forgetOwner(uint64_t owner) {
  unreserve(owner);
  owners_.erase(owner);
}

size_t StoreLedger::ownerBytes(uint64_t owner) const {
  auto it = owners_.find(owner);
  return it == owners_.end() ? 0 : it->second.held + it->second.reserved;
}

}  // namespace poseidon::transport::bootstrap
