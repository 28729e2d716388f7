// The layout of a checkpoint file, spelled out once. The writer writes these fields, the reader
// reads and checks them and FieldSizes measures them, all by running the same two templates, so
// the sides cannot drift apart when a field is added.
//
// Every integer is little-endian; strings are a u32 length and that many bytes; the file ends with
// a u32 CRC32C of everything before it.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>
#include <vector>

#include "ps/checkpoint/checkpoint.h"

namespace poseidon::ps::checkpoint_format {

inline constexpr std::string_view kMagic = "PSDNCKPT";
inline constexpr uint32_t kVersion = 1;
// A reader refuses a longer string before it allocates for it: the length may be garbage.
inline constexpr uint32_t kMaxStringBytes = 4096;

enum class Radix { kDecimal, kHex };  // how a mismatching value is shown

// Magic, version, identity and the clock: what the reader compares against the running job.
template <typename Io>
Status header(Io& io, const CheckpointIdentity& id, uint64_t clock) {
  POSEIDON_RETURN_IF_ERROR(io.magic(kMagic));
  POSEIDON_RETURN_IF_ERROR(io.version(kVersion));
  POSEIDON_RETURN_IF_ERROR(io.identity32("server", id.server));
  POSEIDON_RETURN_IF_ERROR(io.identity32("servers", id.servers));
  POSEIDON_RETURN_IF_ERROR(io.identity32("workers", id.workers));
  POSEIDON_RETURN_IF_ERROR(io.identity64("chunk_bytes", id.chunk_bytes, Radix::kDecimal));
  POSEIDON_RETURN_IF_ERROR(io.identity64("model_fingerprint", id.model_fingerprint, Radix::kHex));
  POSEIDON_RETURN_IF_ERROR(io.identity32("chunks", id.chunks));
  POSEIDON_RETURN_IF_ERROR(io.identity64("elements", id.elements, Radix::kDecimal));
  POSEIDON_RETURN_IF_ERROR(io.identity32("state_words", id.state_words));
  POSEIDON_RETURN_IF_ERROR(io.identityString("optimizer", id.optimizer));
  POSEIDON_RETURN_IF_ERROR(io.identityString("consistency", id.consistency));
  return io.identity64("clock", clock, Radix::kDecimal);
}

// Counters, parameters and optimizer state. `Data` is const for the writer; the reader sizes the
// counter vectors itself, from `count`, once it knows the file holds that many bytes.
template <typename Io, typename Data>
Status payload(Io& io, const CheckpointIdentity& id, Data& data) {
  POSEIDON_RETURN_IF_ERROR(io.u64s("chunk_steps", data.chunk_steps, id.chunks));
  const uint64_t applied = uint64_t{id.chunks} * id.workers;
  POSEIDON_RETURN_IF_ERROR(io.identity64("applied count", applied, Radix::kDecimal));
  POSEIDON_RETURN_IF_ERROR(io.u64s("applied", data.applied, applied));
  POSEIDON_RETURN_IF_ERROR(io.floats("params", data.params));
  if (id.state_words >= 1) POSEIDON_RETURN_IF_ERROR(io.floats("state word 0", data.state0));
  if (id.state_words >= 2) POSEIDON_RETURN_IF_ERROR(io.floats("state word 1", data.state1));
  return Status::ok();
}

struct FieldSize {
  std::string_view field;
  uint64_t bytes;  // saturates at the maximum rather than wrapping
};

// Runs `payload` without a file to learn how many bytes each field takes, so a reader can check
// the file's size before it overwrites the caller's buffers.
class FieldSizes {
 public:
  Status identity64(std::string_view field, uint64_t, Radix) { return add(field, 1, 8); }
  Status u64s(std::string_view field, const std::vector<uint64_t>&, uint64_t count) { return add(field, count, 8); }
  Status floats(std::string_view field, std::span<const float> values) { return add(field, values.size(), 4); }
  const std::vector<FieldSize>& fields() const { return fields_; }

 private:
  Status add(std::string_view field, uint64_t count, uint64_t width) {
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    fields_.push_back({field, count > max / width ? max : count * width});
    return Status::ok();
  }
  std::vector<FieldSize> fields_;
};

}  // namespace poseidon::ps::checkpoint_format
