// Store: the small key-value rendezvous every rank of a job shares while it starts.
//
// Ranks publish what others need to connect to them (addresses, remote descriptors) with set(),
// wait for what they need with get(), and count arrivals with add(). Two implementations: a TCP
// store served by rank 0 (tcp_store.h) and a directory on a shared filesystem (file_store.h).
// Keys are write-once by convention; a set() of an existing key replaces its value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace poseidon::transport::bootstrap {

// Limits every implementation enforces, so a store never allocates what a bad peer asks for.
inline constexpr size_t kMaxKeyBytes = 4096;
inline constexpr size_t kMaxValueBytes = size_t{64} << 20;  // 64 MiB

class Store {
 public:
  virtual ~Store() = default;

  // Publishes value under key and wakes every get() waiting for it.
  virtual Status set(const std::string& key, const std::vector<uint8_t>& value) = 0;

  // Waits until key is set and returns its value; kTimeout naming the key and the store's
  // address when the deadline passes first.
  virtual Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) = 0;

  // Atomically adds delta to the counter under key (absent = 0) and returns the new value.
  // The counter is stored as a decimal string, so get() of it returns e.g. "3".
  virtual Result<int64_t> add(const std::string& key, int64_t delta) = 0;
};

// Every rank of `size` calls this with the same name; it returns once all have arrived. Each
// rank adds 1 to "<name>/count"; the one that brings it to size sets "<name>/done", which the
// others get(). A name is good for one barrier: use a fresh name (e.g. with a counter) each time.
Status barrier(Store& store, const std::string& name, int size, Deadline deadline);

Status setString(Store& store, const std::string& key, const std::string& value);
Result<std::string> getString(Store& store, const std::string& key, Deadline deadline);

// Checks a key and value against the limits above; the message names the key and the size.
Status checkKeyValue(const std::string& key, size_t value_bytes);

// The key as it appears in messages: quoted, non-printable bytes escaped, long keys shortened.
std::string describeKey(const std::string& key);

// Counter encoding shared by the implementations: decimal text of an int64.
Result<int64_t> parseCounter(const std::string& key, const std::vector<uint8_t>& value);
std::vector<uint8_t> formatCounter(int64_t value);
// old + delta, or kInvalidArgument naming the key when it would overflow int64.
Result<int64_t> addCounter(const std::string& key, int64_t old_value, int64_t delta);

}  // namespace poseidon::transport::bootstrap
