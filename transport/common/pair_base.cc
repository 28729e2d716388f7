#include "transport/common/pair_base.h"

#include <spdlog/spdlog.h>

namespace poseidon::transport {

PairBase::PairBase(int peer_rank, Progress* progress)
    : peer_rank_(peer_rank),
      progress_(progress),
      peer_name_(std::make_shared<const std::string>(fmt::format("rank {}", peer_rank))) {}

void PairBase::setPeerAddress(const std::string& address) {
  peer_address_ = address;
  peer_name_ = std::make_shared<const std::string>(fmt::format("rank {} ({})", peer_rank_, address));
}

std::string PairBase::peerName() const { return *peer_name_; }

Status PairBase::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

RequestPtr PairBase::recvImm() {
  auto request = newRequest({RequestLabel::Kind::kWriteNotification, 0, 0, peer_name_});
  Completions done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Writes that landed before the connection broke are still reported.
    if (!imms_.claim(request, done)) {
      if (failed()) {
        failRequest(done, request, failure_);
      } else {
        imms_.await(request);
      }
    }
  }
  completeAll(done);
  return request;
}

bool PairBase::markFailedLocked(const Status& cause) {
  if (failed()) return false;
  failure_ = cause;
  failed_.store(true, std::memory_order_release);
  return true;
}

void PairBase::logFailure(size_t failed_operations, size_t failed_notifications, const Status& cause) const {
  if (failed_operations > 0 || cause.code() == StatusCode::kProtocolError || cause.code() == StatusCode::kAuthError) {
    spdlog::warn("transport: connection to {} failed with {} requests pending: {}", peerName(),
                 failed_operations + failed_notifications, cause.toString());
  } else {
    spdlog::debug("transport: connection to {} ended ({} notification receives posted): {}", peerName(),
                  failed_notifications, cause.toString());
  }
}

}  // namespace poseidon::transport
