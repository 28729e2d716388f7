#include "transport/common/imm_queue.h"

namespace poseidon::transport {

bool ImmQueue::claim(const RequestPtr& request, Completions& done) {
  if (unclaimed_.empty()) return false;
  done.push_back({request, Status::ok(), 0, unclaimed_.front().imm, unclaimed_.front().payload_crc});
  unclaimed_.pop_front();
  return true;
}

Status ImmQueue::deliver(uint32_t imm, std::optional<uint32_t> payload_crc, Completions& done) {
  if (!waiters_.empty()) {
    done.push_back({waiters_.front(), Status::ok(), 0, imm, payload_crc});
    waiters_.pop_front();
    return Status::ok();
  }
  if (unclaimed_.size() >= max_unclaimed_) {
    return makeStatus(StatusCode::kProtocolError, "{} made more than {} writes nobody waited for", peer_.peerName(),
                      max_unclaimed_);
  }
  unclaimed_.push_back({imm, payload_crc});
  return Status::ok();
}

void ImmQueue::failWaiters(const Status& cause, Completions& done) {
  for (auto& waiter : waiters_) failRequest(done, waiter, cause);
  waiters_.clear();
}

}  // namespace poseidon::transport
