#include "transport/common/pair_argument_checks.h"

namespace poseidon::transport {

PairArgumentChecks::PairArgumentChecks(BackendTag backend, OwnsRegion owns)
    : backend_(backend),
      owns_(owns),
      or_not_ours_(owns ? fmt::format(" or not a {} region", backendName(backend)) : std::string()) {}

bool PairArgumentChecks::usable(const MemoryRegion& region, uint64_t offset, uint64_t length) const {
  return region.contains(offset, length) && (owns_ == nullptr || owns_(region));
}

Status PairArgumentChecks::send(const Request& request, std::span<const Slice> slices) const {
  for (const auto& s : slices) {
    if (s.region == nullptr || !usable(*s.region, s.offset, s.length)) {
      return makeStatus(StatusCode::kInvalidArgument, "{}: slice [{}, +{}) is outside its region of {} bytes{}",
                        request.what(), s.offset, s.length, s.region ? s.region->size() : 0, or_not_ours_);
    }
  }
  return Status::ok();
}

Status PairArgumentChecks::recv(const Request& request, const MemoryRegion& region, uint64_t offset,
                                uint64_t length) const {
  if (!usable(region, offset, length)) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: range [{}, +{}) is outside its region of {} bytes{}",
                      request.what(), offset, length, region.size(), or_not_ours_);
  }
  return Status::ok();
}

Status PairArgumentChecks::write(const Request& request, const MemoryRegion& local, uint64_t local_offset,
                                 const RemoteDescriptor& remote, uint64_t remote_offset, uint64_t length) const {
  if (!usable(local, local_offset, length)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: local range [{}, +{}) is outside the local region of {} bytes{}", request.what(),
                      local_offset, length, local.size(), or_not_ours_);
  }
  if (remote.backend != backend_) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: remote descriptor is for backend '{}', not '{}'",
                      request.what(), backendName(remote.backend), backendName(backend_));
  }
  if (remote_offset > remote.length || length > remote.length - remote_offset) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{}: remote range [{}, +{}) is outside the remote region of {} bytes", request.what(),
                      remote_offset, length, remote.length);
  }
  return Status::ok();
}

}  // namespace poseidon::transport
