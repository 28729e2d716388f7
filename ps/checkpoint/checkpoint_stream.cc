#include "ps/checkpoint/checkpoint_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <limits>
#include <utility>

#include "transport/wire/crc32c.h"
#include "transport/wire/little_endian.h"

namespace poseidon::ps {

using checkpoint_format::Radix;
using transport::wire::crc32c;
using transport::wire::loadLe32;
using transport::wire::loadLe64;
using transport::wire::storeLe32;
using transport::wire::storeLe64;

namespace {

// Big enough that a disk sees large writes, small enough not to matter next to the model.
constexpr size_t kBufferBytes = size_t{4} << 20;
// Linux moves at most ~2 GiB per read()/write() call anyway.
constexpr size_t kMaxSyscallBytes = size_t{1} << 30;
constexpr bool kLittleEndianHost = std::endian::native == std::endian::little;

// A string from a file may hold anything; a message must stay one readable line.
std::string printable(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte >= 0x20 && byte < 0x7F) {
      out += c;
    } else {
      out += fmt::format("\\x{:02x}", byte);
    }
  }
  return out + "\"";
}

std::string show(uint64_t value, Radix radix) {
  return radix == Radix::kHex ? fmt::format("{:#018x}", value) : fmt::format("{}", value);
}

void closeQuietly(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

// ---- writer ----

CheckpointWriter::CheckpointWriter(std::string path) : path_(std::move(path)) {}

CheckpointWriter::~CheckpointWriter() { closeQuietly(fd_); }

Status CheckpointWriter::create() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return errnoStatus(StatusCode::kIoError, "create checkpoint " + path_);
  buffer_.reserve(kBufferBytes);
  return Status::ok();
}

Status CheckpointWriter::magic(std::string_view magic) { return append(magic.data(), magic.size()); }

Status CheckpointWriter::version(uint32_t version) { return identity32("format version", version); }

Status CheckpointWriter::identity32(std::string_view, uint32_t value) {
  uint8_t bytes[4];
  storeLe32(bytes, value);
  return append(bytes, sizeof bytes);
}

Status CheckpointWriter::identity64(std::string_view, uint64_t value, Radix) {
  uint8_t bytes[8];
  storeLe64(bytes, value);
  return append(bytes, sizeof bytes);
}

Status CheckpointWriter::identityString(std::string_view field, const std::string& value) {
  POSEIDON_RETURN_IF_ERROR(identity32(field, static_cast<uint32_t>(value.size())));
  return append(value.data(), value.size());
}

Status CheckpointWriter::u64s(std::string_view field, std::span<const uint64_t> values, uint64_t) {
  if constexpr (kLittleEndianHost) return append(values.data(), values.size_bytes());
  for (const uint64_t v : values) POSEIDON_RETURN_IF_ERROR(identity64(field, v, Radix::kDecimal));
  return Status::ok();
}

Status CheckpointWriter::floats(std::string_view field, std::span<const float> values) {
  if constexpr (kLittleEndianHost) return append(values.data(), values.size_bytes());
  for (const float v : values) POSEIDON_RETURN_IF_ERROR(identity32(field, std::bit_cast<uint32_t>(v)));
  return Status::ok();
}

Status CheckpointWriter::finish() {
  uint8_t bytes[4];
  storeLe32(bytes, crc_);
  POSEIDON_RETURN_IF_ERROR(append(bytes, sizeof bytes));
  POSEIDON_RETURN_IF_ERROR(flush());
  if (::fsync(fd_) != 0) return errnoStatus(StatusCode::kIoError, "fsync checkpoint " + path_);
  const int fd = std::exchange(fd_, -1);
  // close() can report a deferred write error (NFS); the file is not complete then.
  if (::close(fd) != 0) return errnoStatus(StatusCode::kIoError, "close checkpoint " + path_);
  return Status::ok();
}

Status CheckpointWriter::append(const void* data, size_t length) {
  crc_ = crc32c(data, length, crc_);
  if (buffer_.size() + length > kBufferBytes) {
    POSEIDON_RETURN_IF_ERROR(flush());
    // Large arrays go from the caller's memory to the file without a copy.
    if (length >= kBufferBytes) return writeAll(data, length);
  }
  const auto* bytes = static_cast<const uint8_t*>(data);
  buffer_.insert(buffer_.end(), bytes, bytes + length);
  return Status::ok();
}

Status CheckpointWriter::flush() {
  POSEIDON_RETURN_IF_ERROR(writeAll(buffer_.data(), buffer_.size()));
  buffer_.clear();
  return Status::ok();
}

Status CheckpointWriter::writeAll(const void* data, size_t length) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (length > 0) {
    const ssize_t n = ::write(fd_, p, std::min(length, kMaxSyscallBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(StatusCode::kIoError, "write checkpoint " + path_);
    if (n == 0) return makeStatus(StatusCode::kIoError, "write checkpoint {}: wrote 0 of {} bytes", path_, length);
    p += n;
    length -= static_cast<size_t>(n);
  }
  return Status::ok();
}

// ---- reader ----

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {}

CheckpointReader::~CheckpointReader() { closeQuietly(fd_); }

Status CheckpointReader::open() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return errnoStatus(StatusCode::kIoError, "open checkpoint " + path_);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) return errnoStatus(StatusCode::kIoError, "stat checkpoint " + path_);
  if (!S_ISREG(st.st_mode)) return corrupt("is not a regular file");
  size_ = static_cast<uint64_t>(st.st_size);
  return Status::ok();
}

Status CheckpointReader::magic(std::string_view expected) {
  std::string found(expected.size(), '\0');
  POSEIDON_RETURN_IF_ERROR(read("magic", found.data(), found.size()));
  if (found == expected) return Status::ok();
  return corrupt(
      fmt::format("is not a Poseidon checkpoint: it starts with {}, not {}", printable(found), printable(expected)));
}

Status CheckpointReader::version(uint32_t expected) {
  uint8_t bytes[4];
  POSEIDON_RETURN_IF_ERROR(read("format version", bytes, sizeof bytes));
  const uint32_t found = loadLe32(bytes);
  if (found == expected) return Status::ok();
  return corrupt(fmt::format("has format version {}; this build reads version {}", found, expected));
}

Status CheckpointReader::identity32(std::string_view field, uint32_t expected) {
  uint8_t bytes[4];
  POSEIDON_RETURN_IF_ERROR(read(field, bytes, sizeof bytes));
  const uint32_t found = loadLe32(bytes);
  return found == expected ? Status::ok() : mismatch(field, fmt::format("{}", found), fmt::format("{}", expected));
}

Status CheckpointReader::identity64(std::string_view field, uint64_t expected, Radix radix) {
  uint8_t bytes[8];
  POSEIDON_RETURN_IF_ERROR(read(field, bytes, sizeof bytes));
  const uint64_t found = loadLe64(bytes);
  return found == expected ? Status::ok() : mismatch(field, show(found, radix), show(expected, radix));
}

Status CheckpointReader::identityString(std::string_view field, const std::string& expected) {
  uint8_t bytes[4];
  POSEIDON_RETURN_IF_ERROR(read(fmt::format("{} length", field), bytes, sizeof bytes));
  const uint32_t length = loadLe32(bytes);
  if (length > checkpoint_format::kMaxStringBytes) {
    return corrupt(fmt::format("field {} has length {}, beyond the limit of {} bytes", field, length,
                               checkpoint_format::kMaxStringBytes));
  }
  std::string found(length, '\0');
  POSEIDON_RETURN_IF_ERROR(read(field, found.data(), found.size()));
  return found == expected ? Status::ok() : mismatch(field, printable(found), printable(expected));
}

Status CheckpointReader::u64s(std::string_view field, std::vector<uint64_t>& values, uint64_t count) {
  // Checked before resizing: `count` is the caller's, but the file must hold it before we allocate.
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  POSEIDON_RETURN_IF_ERROR(need(field, offset_, count > max / 8 ? max : count * 8));
  values.resize(count);
  POSEIDON_RETURN_IF_ERROR(read(field, values.data(), values.size() * 8));
  if constexpr (!kLittleEndianHost) {
    for (uint64_t& v : values) v = loadLe64(reinterpret_cast<const uint8_t*>(&v));
  }
  return Status::ok();
}

Status CheckpointReader::floats(std::string_view field, std::span<float> values) {
  POSEIDON_RETURN_IF_ERROR(read(field, values.data(), values.size_bytes()));
  if constexpr (!kLittleEndianHost) {
    for (float& v : values) v = std::bit_cast<float>(loadLe32(reinterpret_cast<const uint8_t*>(&v)));
  }
  return Status::ok();
}

Status CheckpointReader::expectRemaining(std::span<const checkpoint_format::FieldSize> fields) const {
  uint64_t at = offset_;
  for (const auto& f : fields) {
    POSEIDON_RETURN_IF_ERROR(need(f.field, at, f.bytes));
    at += f.bytes;
  }
  POSEIDON_RETURN_IF_ERROR(need("checksum", at, 4));
  if (at + 4 == size_) return Status::ok();
  return corrupt(fmt::format("has {} bytes of trailing garbage after its checksum (a complete file has {} bytes)",
                             size_ - at - 4, at + 4));
}

Status CheckpointReader::checksum() {
  const uint32_t computed = crc_;
  uint8_t bytes[4];
  POSEIDON_RETURN_IF_ERROR(read("checksum", bytes, sizeof bytes));
  const uint32_t stored = loadLe32(bytes);
  if (stored != computed) {
    return corrupt(fmt::format("fails its checksum: the file stores CRC32C {:#010x} but its contents give {:#010x}",
                               stored, computed));
  }
  if (offset_ != size_) {
    return corrupt(fmt::format("has {} bytes of trailing garbage after its checksum", size_ - offset_));
  }
  return Status::ok();
}

Status CheckpointReader::read(std::string_view field, void* data, size_t length) {
  POSEIDON_RETURN_IF_ERROR(need(field, offset_, length));
  auto* p = static_cast<uint8_t*>(data);
  for (size_t done = 0; done < length;) {
    const ssize_t n = ::read(fd_, p + done, std::min(length - done, kMaxSyscallBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(StatusCode::kIoError, fmt::format("read checkpoint {} field {}", path_, field));
    if (n == 0) return corrupt(fmt::format("shrank while being read: it ended inside field {}", field));
    done += static_cast<size_t>(n);
  }
  crc_ = crc32c(p, length, crc_);
  offset_ += length;
  return Status::ok();
}

Status CheckpointReader::need(std::string_view field, uint64_t at, uint64_t length) const {
  if (at <= size_ && length <= size_ - at) return Status::ok();
  return corrupt(fmt::format("is truncated: field {} needs {} bytes at offset {}, but the file has {} bytes", field,
                             length, at, size_));
}

Status CheckpointReader::corrupt(const std::string& what) const {
  return makeStatus(StatusCode::kIoError, "checkpoint {} {}", path_, what);
}

Status CheckpointReader::mismatch(std::string_view field, const std::string& found, const std::string& expected) const {
  return makeStatus(StatusCode::kInvalidArgument, "checkpoint {} was written with {} {}; this job uses {}", path_,
                    field, found, expected);
}

}  // namespace poseidon::ps
