#include "ps/checkpoint/durable_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace poseidon::ps {

Status syncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errnoStatus(StatusCode::kIoError, "open directory " + dir);
  const bool synced = ::fsync(fd) == 0;
  Status status = synced ? Status::ok() : errnoStatus(StatusCode::kIoError, "fsync directory " + dir);
  ::close(fd);
  return status;
}

Status makeDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0) {
    if (errno == EEXIST) return Status::ok();
    return errnoStatus(StatusCode::kIoError, "create checkpoint directory " + dir);
  }
  std::filesystem::path created = std::filesystem::path(dir).lexically_normal();
  if (!created.has_filename()) created = created.parent_path();  // "a/b/" is b, whose parent is a
  const std::filesystem::path parent = created.parent_path();
  return syncDirectory(parent.empty() ? "." : parent.string());
}

Status checkWritableDirectory(const std::string& dir) {
  Status made = makeDirectory(dir);
  if (!made) return made;
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return makeStatus(StatusCode::kIoError, "checkpoint directory {} is not a directory", dir);
  }
  // A unique name: several servers of one process may share the directory.
  std::string probe = dir + "/.poseidon-write-probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return errnoStatus(StatusCode::kIoError, fmt::format("create a file in checkpoint directory {}", dir));
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::ok();
}

Status replaceFile(const std::string& temp, const std::string& path, const std::string& dir) {
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status status = errnoStatus(StatusCode::kIoError, fmt::format("rename checkpoint {} to {}", temp, path));
    ::unlink(temp.c_str());  // a partial file only takes space; the previous checkpoint is intact
    return status;
  }
  return syncDirectory(dir);
}

}  // namespace poseidon::ps
