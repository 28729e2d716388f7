#include "trainer/reference/float_memory.h"

#include <algorithm>
#include <new>
#include <utility>

namespace poseidon::trainer::reference {

FloatBlock::~FloatBlock() {
  if (data_ != nullptr && release_ != nullptr) release_(data_);
}

FloatBlock::FloatBlock(FloatBlock&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      release_(std::exchange(other.release_, nullptr)) {}

FloatBlock& FloatBlock::operator=(FloatBlock&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(release_, other.release_);
  return *this;
}

Status FloatMemory::checkSameSize(const char* operation, size_t from, size_t to) const {
  if (from == to) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "{} memory: {} of {} floats into {} floats, expected equal sizes",
                    name(), operation, from, to);
}

namespace {

class HostMemory final : public FloatMemory {
 public:
  const char* name() const override { return "host"; }
  kernels::Place place() const override { return kernels::Place::cpu(); }

  Result<FloatBlock> allocate(size_t n) const override {
    auto* data = new (std::nothrow) float[n == 0 ? 1 : n]();
    if (data == nullptr) {
      return makeStatus(StatusCode::kUnavailable, "host memory: cannot allocate {} floats", n);
    }
    return FloatBlock(data, n, [](float* p) { delete[] p; });
  }
  Status upload(std::span<const float> host, std::span<float> to) const override { return copy(host, to); }
  Status download(std::span<const float> from, std::span<float> host) const override { return copy(from, host); }
  Status copy(std::span<const float> from, std::span<float> to) const override {
    POSEIDON_RETURN_IF_ERROR(checkSameSize("a copy", from.size(), to.size()));
    std::copy(from.begin(), from.end(), to.begin());
    return Status::ok();
  }
};

}  // namespace

const FloatMemory& hostMemory() {
  static const HostMemory memory;
  return memory;
}

}  // namespace poseidon::trainer::reference
