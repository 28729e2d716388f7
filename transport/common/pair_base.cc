#include "transport/common/pair_base.h"

#include <spdlog/spdlog.h>

namespace poseidon::transport {

std::string PairBase::peerName() const {
  if (peer_address_.empty()) return fmt::format("rank {}", peer_rank_);
  return fmt::format("rank {} ({})", peer_rank_, peer_address_);
}

std::string PairBase::describe(const char* op, uint32_t tag) const {
  return fmt::format("{} tag {} {} {}", op, tag, std::string(op) == "recv" ? "from" : "to", peerName());
}

Status PairBase::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

RequestPtr PairBase::recvImm() {
  auto request = std::make_shared<Request>(fmt::format("write notification from {}", peerName()));
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
