#include "transport/bootstrap/file_store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <thread>

#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

namespace {

// File names past this length are replaced by a hash (NAME_MAX is 255 on common filesystems).
constexpr size_t kMaxPlainFileName = 200;
constexpr auto kFirstPollDelay = std::chrono::milliseconds(1);
constexpr auto kMaxPollDelay = std::chrono::milliseconds(100);
constexpr auto kMaxLockPollDelay = std::chrono::milliseconds(20);
constexpr const char* kLockFileName = ".lock";

std::string sha256Hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

// Unique across the hosts and processes sharing the directory, and never a key's name (those
// start with "k_" or "h_").
std::string tempFileName() {
  static std::atomic<uint64_t> counter{0};
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format(".tmp.{}.{}.{}", host, ::getpid(), counter.fetch_add(1));
}

// Sleeps for the current backoff step (never past the deadline) and doubles it up to `limit`.
void backoff(std::chrono::nanoseconds& delay, std::chrono::nanoseconds limit, Deadline deadline) {
  std::this_thread::sleep_for(std::min(delay, deadline.remaining()));
  delay = std::min(delay * 2, limit);
}

}  // namespace

Result<std::unique_ptr<FileStore>> FileStore::open(const std::string& directory, FileStoreOptions options) {
  if (directory.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "file store directory is empty, expected a path");
  }
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error || !std::filesystem::is_directory(directory, error)) {
    return makeStatus(StatusCode::kIoError, "file store directory {} cannot be created or is not a directory{}",
                      directory, error ? ": " + error.message() : "");
  }
  return std::unique_ptr<FileStore>(new FileStore(directory, options));
}

FileStore::FileStore(std::string directory, FileStoreOptions options)
    : directory_(std::move(directory)), options_(options) {}

std::string FileStore::pathFor(const std::string& key) const {
  // Keys may hold '/' or any byte: keep the safe characters readable, escape the rest.
  std::string name = "k_";
  for (const char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += ch;
    } else {
      name += fmt::format("%{:02X}", c);
    }
  }
  if (name.size() > kMaxPlainFileName) name = "h_" + sha256Hex(key);
  return directory_ + "/" + name;
}

Status FileStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  POSEIDON_RETURN_IF_ERROR(checkKeyValue(key, value.size()));
  return writeAtomically(key, value);
}

Result<std::vector<uint8_t>> FileStore::get(const std::string& key, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(checkKeyValue(key, 0));
  std::chrono::nanoseconds delay = kFirstPollDelay;
  while (true) {
    Result<std::optional<std::vector<uint8_t>>> value = readIfPresent(key);
    if (!value) return value.status();
    if (value->has_value()) return std::move(**value);
    if (deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "key {} was not set in file store {} before the deadline ({} absent)",
                        describeKey(key), directory_, pathFor(key));
    }
    backoff(delay, kMaxPollDelay, deadline);
  }
}

Result<int64_t> FileStore::add(const std::string& key, int64_t delta) {
  POSEIDON_RETURN_IF_ERROR(checkKeyValue(key, 0));
  const std::string lock_path = directory_ + "/" + kLockFileName;
  // A fresh open file description per call, so threads of one process exclude each other too.
  Fd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!lock.valid()) return errnoStatus(StatusCode::kIoError, "open lock file " + lock_path);
  const Deadline lock_deadline = Deadline::after(options_.lock_timeout);
  std::chrono::nanoseconds delay = kFirstPollDelay;
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) return errnoStatus(StatusCode::kIoError, "flock " + lock_path);
    if (lock_deadline.expired()) {
      return makeStatus(StatusCode::kTimeout, "add {} in file store {}: lock {} still held after {} ms",
                        describeKey(key), directory_, lock_path, options_.lock_timeout.count());
    }
    backoff(delay, kMaxLockPollDelay, lock_deadline);
  }
  // The lock is released when `lock` closes, on every return below.
  int64_t old_value = 0;
  Result<std::optional<std::vector<uint8_t>>> current = readIfPresent(key);
  if (!current) return current.status();
  if (current->has_value()) {
    Result<int64_t> parsed = parseCounter(key, **current);
    if (!parsed) return parsed.status();
    old_value = *parsed;
  }
  Result<int64_t> sum = addCounter(key, old_value, delta);
  if (!sum) return sum.status();
  POSEIDON_RETURN_IF_ERROR(writeAtomically(key, formatCounter(*sum)));
  return *sum;
}

Status FileStore::writeAtomically(const std::string& key, const std::vector<uint8_t>& value) {
  const std::string path = pathFor(key);
  const std::string temp = directory_ + "/" + tempFileName();
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid()) return errnoStatus(StatusCode::kIoError, "create " + temp);
  auto fail = [&](const std::string& what) {
    Status status = errnoStatus(StatusCode::kIoError, fmt::format("{} for key {}", what, describeKey(key)));
    ::unlink(temp.c_str());
    return status;
  };
  size_t written = 0;
  while (written < value.size()) {
    const ssize_t n = ::write(fd.get(), value.data() + written, value.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write " + temp);
    written += static_cast<size_t>(n);
  }
  // Data on disk before the name points at it, so no reader ever sees a partial value.
  if (::fsync(fd.get()) != 0) return fail("fsync " + temp);
  if (::close(fd.release()) != 0) return fail("close " + temp);
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail("rename " + temp + " to " + path);
  // And the rename itself durable; some filesystems cannot fsync a directory (EINVAL): fine.
  Fd dir(::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.valid() && ::fsync(dir.get()) != 0 && errno != EINVAL) {
    return errnoStatus(StatusCode::kIoError, "fsync directory " + directory_);
  }
  return Status::ok();
}

Result<std::optional<std::vector<uint8_t>>> FileStore::readIfPresent(const std::string& key) const {
  const std::string path = pathFor(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return std::optional<std::vector<uint8_t>>();
    return errnoStatus(StatusCode::kIoError, fmt::format("open {} for key {}", path, describeKey(key)));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return errnoStatus(StatusCode::kIoError, "fstat " + path);
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size > kMaxValueBytes) {
    return makeStatus(StatusCode::kIoError, "file {} for key {} is {} bytes, expected at most {}", path,
                      describeKey(key), size, kMaxValueBytes);
  }
  std::vector<uint8_t> value(size);
  size_t got = 0;
  while (got < value.size()) {
    const ssize_t n = ::read(fd.get(), value.data() + got, value.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(StatusCode::kIoError, "read " + path);
    if (n == 0) break;  // files are never modified in place, but do not trust the size blindly
    got += static_cast<size_t>(n);
  }
  value.resize(got);
  return std::optional<std::vector<uint8_t>>(std::move(value));
}

}  // namespace poseidon::transport::bootstrap
