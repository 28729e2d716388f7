// Streamed checkpoint I/O. Files run to gigabytes, so neither side builds the file in memory: the
// writer buffers small fields and sends large arrays straight from the caller's memory, the
// reader reads arrays straight into it, and both keep a running CRC32C on the way.
//
// Both implement the operations checkpoint_format.h calls: the writer writes each value, the
// reader reads it and checks it against the value given, saying which field differs and how.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ps/checkpoint/checkpoint_format.h"

namespace poseidon::ps {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string path);
  ~CheckpointWriter();  // closes an unfinished file; removing it is the caller's business
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  Status create();  // truncates a file left by an earlier process that had the same pid
  Status magic(std::string_view magic);
  Status version(uint32_t version);
  Status identity32(std::string_view field, uint32_t value);
  Status identity64(std::string_view field, uint64_t value, checkpoint_format::Radix radix);
  Status identityString(std::string_view field, const std::string& value);
  // `count` was checked against `values` before the file was created.
  Status u64s(std::string_view field, std::span<const uint64_t> values, uint64_t count);
  Status floats(std::string_view field, std::span<const float> values);
  // Appends the CRC of everything written, flushes, fsyncs and closes.
  Status finish();

 private:
  Status append(const void* data, size_t length);
  Status flush();
  Status writeAll(const void* data, size_t length);

  std::string path_;
  int fd_ = -1;
  uint32_t crc_ = 0;
  std::vector<uint8_t> buffer_;
};

class CheckpointReader {
 public:
  explicit CheckpointReader(std::string path);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  Status open();
  Status magic(std::string_view expected);
  Status version(uint32_t expected);
  Status identity32(std::string_view field, uint32_t expected);
  Status identity64(std::string_view field, uint64_t expected, checkpoint_format::Radix radix);
  Status identityString(std::string_view field, const std::string& expected);
  // Resizes `values` to `count` and fills it.
  Status u64s(std::string_view field, std::vector<uint64_t>& values, uint64_t count);
  Status floats(std::string_view field, std::span<float> values);
  // The rest of the file must be exactly `fields` and the checksum: names the field where it ends
  // early, or counts the bytes beyond the checksum.
  Status expectRemaining(std::span<const checkpoint_format::FieldSize> fields) const;
  // Reads the stored CRC and compares it with the CRC of everything read before it.
  Status checksum();

 private:
  Status read(std::string_view field, void* data, size_t length);
  Status need(std::string_view field, uint64_t at, uint64_t length) const;
  Status corrupt(const std::string& what) const;
  Status mismatch(std::string_view field, const std::string& found, const std::string& expected) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
  uint32_t crc_ = 0;
};

}  // namespace poseidon::ps
