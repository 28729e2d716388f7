#include "sfb/sf_inbox.h"

#include <fmt/format.h>

#include "sfb/sf_imm.h"

namespace poseidon::sfb {

using transport::RequestPtr;

SfInbox::SfInbox(transport::Pair& pair, const SfSlotLayout& layout,
                 std::span<const std::atomic<uint64_t>> own_iterations)
    : pair_(pair), layout_(layout), own_iterations_(own_iterations), arrived_(layout.layerCount(), 0) {}

Status SfInbox::waitFor(size_t layer, uint64_t iteration, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // Landed factors count even if the peer broke off afterwards: a peer that finished its last
    // iteration and closed must not fail a slower worker's last update.
    if (arrived_[layer] > iteration) return Status::ok();
    if (!failure_.isOk()) return failure_;
    const bool expired = deadline.expired();
    if (!driving_) {
      if (!posted_) posted_ = pair_.recvImm();
      const RequestPtr request = posted_;
      if (!request->test()) {
        if (expired) break;
        driving_ = true;
        lock.unlock();
        (void)request->wait(deadline);  // the outcome is read from the request itself
        lock.lock();
        driving_ = false;
        changed_.notify_all();  // the stream is free: another waiter may drive it now
        if (!request->test()) continue;
      }
      posted_.reset();
      failure_ = request->status().isOk()
                     ? recordLocked(request->imm())
                     : request->status().withContext(fmt::format("SFB factors from {}", pair_.peerName()));
      changed_.notify_all();
      continue;
    }
    if (expired) break;
    if (deadline.isNever()) {
      changed_.wait(lock);
    } else {
      changed_.wait_until(lock, deadline.at());
    }
  }
  return makeStatus(StatusCode::kTimeout, "no SFB factors of layer {} '{}' iteration {} from {} in time", layer,
                    layout_.layer(layer).name(), iteration, pair_.peerName());
}

uint64_t SfInbox::arrivals(size_t layer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return arrived_[layer];
}

Status SfInbox::recordLocked(uint32_t imm) {
  const SfImm got = decodeSfImm(imm);
  if (got.layer >= layout_.layerCount()) {
    return makeStatus(StatusCode::kProtocolError, "{} sent SFB immediate {:#010x} naming layer {}; there are {} layers",
                      pair_.peerName(), imm, got.layer, layout_.layerCount());
  }
  const std::string& name = layout_.layer(got.layer).name();
  const uint64_t expected = arrived_[got.layer];
  if (got.iteration_low != sfIterationLow(expected)) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent SFB factors of layer {} '{}' for iteration {} (low {} bits); expected "
                      "iteration {} (low bits {})",
                      pair_.peerName(), got.layer, name, got.iteration_low, kSfImmIterationBits, expected,
                      sfIterationLow(expected));
  }
  const uint64_t own = own_iterations_[got.layer].load(std::memory_order_acquire);
  if (expected > own + 1) {
    return makeStatus(StatusCode::kProtocolError,
                      "{} sent SFB factors of layer {} '{}' for iteration {} while this worker is at "
                      "iteration {}; a peer can be at most one ahead (it would overwrite factors in use)",
                      pair_.peerName(), got.layer, name, expected, own);
  }
  arrived_[got.layer] = expected + 1;
  return Status::ok();
}

}  // namespace poseidon::sfb
