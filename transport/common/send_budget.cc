#include "transport/common/send_budget.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "transport/common/fd.h"

namespace poseidon::transport {

namespace {
int64_t nanosOf(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
constexpr uint64_t kSharedMagic = 0x706f736562756467;  // "posebudg"
}  // namespace

struct SendBudget::SharedState {
  uint64_t magic;
  uint64_t rate;
  uint64_t burst;
  std::atomic<int64_t> empty_at;
  std::atomic<int64_t> users;
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "a shared budget needs address-free atomics");

SendBudget::SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, std::atomic<int64_t>* empty_at)
    : rate_(std::max<uint64_t>(1, bytes_per_second)),
      burst_(std::max<uint64_t>(1, burst_bytes)),
      burst_nanos_(static_cast<int64_t>(std::ceil(static_cast<double>(burst_) * 1e9 / static_cast<double>(rate_)))),
      empty_at_(empty_at) {}

SendBudget::SendBudget(uint64_t bytes_per_second, uint64_t burst_bytes, Clock::time_point now)
    : SendBudget(bytes_per_second, burst_bytes, nullptr) {
  own_empty_at_.store(nanosOf(now) - burst_nanos_);  // full
  empty_at_ = &own_empty_at_;
}

SendBudget::~SendBudget() {
  if (shared_ == nullptr) return;
  // The last process out removes the object (under the file lock, so none opens it meanwhile).
  Fd fd(::open(shared_path_.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.valid()) ::flock(fd.get(), LOCK_EX);
  if (shared_->users.fetch_sub(1) == 1) ::unlink(shared_path_.c_str());
  ::munmap(shared_, sizeof(SharedState));
}

Result<std::unique_ptr<SendBudget>> SendBudget::shared(const std::string& name, uint64_t bytes_per_second,
                                                       uint64_t burst_bytes) {
  const bool valid_name = !name.empty() && name.size() <= 200 && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
  if (!valid_name) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "send budget share '{}': expected 1 to 200 letters, digits, '-', '_' or '.'", name);
  }
  const std::string path = fmt::format("/dev/shm/poseidon-budget-{}", name);
  // /dev/shm is everyone's: never follow a link planted there, never write a file of another user.
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd.valid()) return errnoStatus(StatusCode::kIoError, fmt::format("send budget share {}", path));
  // Held until we return: the mapping keeps this open file (and so a lock on it) alive.
  if (::flock(fd.get(), LOCK_EX) != 0) return errnoStatus(StatusCode::kIoError, fmt::format("flock {}", path));
  struct Unlock {
    int fd;
    ~Unlock() { ::flock(fd, LOCK_UN); }
  } unlock{fd.get()};
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return errnoStatus(StatusCode::kIoError, fmt::format("fstat {}", path));
  if (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) {
    return makeStatus(StatusCode::kInvalidArgument, "send budget share {}: not a regular file of this user (uid {})",
                      path, ::geteuid());
  }
  const bool fresh = info.st_size == 0;
  if (fresh && ::ftruncate(fd.get(), sizeof(SharedState)) != 0) {
    return errnoStatus(StatusCode::kIoError, fmt::format("ftruncate {}", path));
  }
  if (!fresh && info.st_size != static_cast<off_t>(sizeof(SharedState))) {
    return makeStatus(StatusCode::kInvalidArgument, "send budget share {}: {} bytes, not a budget of ours ({})", path,
                      info.st_size, sizeof(SharedState));
  }
  void* mapped = ::mmap(nullptr, sizeof(SharedState), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (mapped == MAP_FAILED) return errnoStatus(StatusCode::kIoError, fmt::format("mmap {}", path));
  auto* state = static_cast<SharedState*>(mapped);
  if (fresh) {
    state->magic = kSharedMagic;
    state->rate = bytes_per_second;
    state->burst = burst_bytes;
    state->users.store(0);
  } else if (state->magic != kSharedMagic || state->rate != bytes_per_second || state->burst != burst_bytes) {
    const Status status =
        state->magic != kSharedMagic
            ? makeStatus(StatusCode::kInvalidArgument, "send budget share {}: not a budget of ours (no marker)", path)
            : makeStatus(StatusCode::kInvalidArgument,
                         "send budget share {}: this process gives {} bytes/s (burst {}), the processes sharing it "
                         "gave {} (burst {})",
                         path, bytes_per_second, burst_bytes, state->rate, state->burst);
    ::munmap(mapped, sizeof(SharedState));
    return status;
  }
  state->users.fetch_add(1);
  std::unique_ptr<SendBudget> budget(new SendBudget(bytes_per_second, burst_bytes, &state->empty_at));
  if (fresh) state->empty_at.store(nanosOf(Clock::now()) - budget->burst_nanos_);  // full
  budget->shared_ = state;
  budget->shared_path_ = path;
  return budget;
}

Result<std::unique_ptr<SendBudget>> SendBudget::forDevice(uint64_t bytes_per_second, const std::string& share) {
  if (bytes_per_second == 0) return std::unique_ptr<SendBudget>();
  if (share.empty()) return std::make_unique<SendBudget>(bytes_per_second, defaultBurst(bytes_per_second));
  return shared(share, bytes_per_second, defaultBurst(bytes_per_second));
}

uint64_t SendBudget::defaultBurst(uint64_t bytes_per_second) {
  return std::max<uint64_t>(uint64_t{64} << 10, bytes_per_second / 200);
}

int64_t SendBudget::nanosFor(uint64_t bytes) const {
  return static_cast<int64_t>(std::llround(static_cast<double>(bytes) * 1e9 / static_cast<double>(rate_)));
}

uint64_t SendBudget::bytesIn(int64_t nanos) const {
  if (nanos <= 0) return 0;
  return static_cast<uint64_t>(std::floor(static_cast<double>(nanos) * static_cast<double>(rate_) / 1e9 + 1e-6));
}

uint64_t SendBudget::take(uint64_t want, uint64_t at_least, Clock::time_point now) {
  const int64_t t = nanosOf(now);
  int64_t empty_at = empty_at_->load(std::memory_order_relaxed);
  for (;;) {
    const int64_t from = std::max(empty_at, t - burst_nanos_);  // an idle bucket holds the burst, no more
    const uint64_t have = std::min(burst_, bytesIn(t - from));
    if (have == 0 || have < std::min({want, at_least, burst_})) return 0;
    const uint64_t granted = std::min(want, have);
    if (empty_at_->compare_exchange_weak(empty_at, from + nanosFor(granted), std::memory_order_relaxed)) return granted;
  }
}

void SendBudget::giveBack(uint64_t bytes) { empty_at_->fetch_sub(nanosFor(bytes), std::memory_order_relaxed); }

std::chrono::nanoseconds SendBudget::timeUntil(uint64_t bytes, Clock::time_point now) const {
  const int64_t t = nanosOf(now);
  const int64_t from = std::max(empty_at_->load(std::memory_order_relaxed), t - burst_nanos_);
  return std::chrono::nanoseconds(std::max<int64_t>(0, from + nanosFor(std::min(bytes, burst_)) - t));
}

}  // namespace poseidon::transport
