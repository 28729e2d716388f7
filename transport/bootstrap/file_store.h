// FileStore: a Store over a directory that every rank sees (NFS, Lustre, or /tmp for one host).
//
// For clusters where rank 0 cannot listen on a port others reach, or as a fallback. A key is a
// file: set() writes a temporary file, fsyncs it and renames it into place, so a reader sees
// the whole value or nothing. get() polls with backoff until the deadline. add() serialises
// read-modify-write through flock() on a lock file (Linux NFS clients map flock to NFS locks).
// Use a fresh directory per job: keys left by an earlier job would satisfy get() at once.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/bootstrap/store.h"

namespace poseidon::transport::bootstrap {

struct FileStoreOptions {
  // Bound on waiting for the lock in add(), which takes no deadline.
  std::chrono::milliseconds lock_timeout{60'000};
};

class FileStore final : public Store {
 public:
  // Uses `directory`, creating it (and its parents) if needed.
  static Result<std::unique_ptr<FileStore>> open(const std::string& directory, FileStoreOptions options = {});

  Status set(const std::string& key, const std::vector<uint8_t>& value) override;
  Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;

  const std::string& directory() const { return directory_; }
  // The file that holds key (exposed for tests and for operators reading a stuck job).
  std::string pathFor(const std::string& key) const;

 private:
  FileStore(std::string directory, FileStoreOptions options);

  Status writeAtomically(const std::string& key, const std::vector<uint8_t>& value);
  // The value, nullopt when the key is not set yet, or an error reading it.
  Result<std::optional<std::vector<uint8_t>>> readIfPresent(const std::string& key) const;

  const std::string directory_;
  const FileStoreOptions options_;
};

}  // namespace poseidon::transport::bootstrap
