#include "trainer/timeline/csv_log.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <set>
#include <utility>

namespace poseidon::trainer::timeline {
namespace {

Status checkColumns(const std::string& path, const std::vector<std::string>& columns) {
  if (columns.empty()) return makeStatus(StatusCode::kInvalidArgument, "{}: no columns, expected at least one", path);
  std::set<std::string> seen;
  for (const std::string& column : columns) {
    if (column.empty() || column.find_first_of(",\"\r\n") != std::string::npos) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "{}: column name \"{}\", expected a non-empty name without comma, quote or line break", path,
                        column);
    }
    if (!seen.insert(column).second) {
      return makeStatus(StatusCode::kInvalidArgument, "{}: column \"{}\" declared twice", path, column);
    }
  }
  return Status::ok();
}

}  // namespace

CsvLog::CsvLog(std::string path, std::vector<std::string> columns, int fd)
    : path_(std::move(path)), columns_(std::move(columns)), fd_(fd) {}

CsvLog::CsvLog(CsvLog&& other) noexcept
    : path_(std::move(other.path_)),
      columns_(std::move(other.columns_)),
      fd_(std::exchange(other.fd_, -1)),
      line_(std::move(other.line_)) {}

CsvLog& CsvLog::operator=(CsvLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    columns_ = std::move(other.columns_);
    fd_ = std::exchange(other.fd_, -1);
    line_ = std::move(other.line_);
  }
  return *this;
}

CsvLog::~CsvLog() {
  if (fd_ >= 0) ::close(fd_);
}

Result<CsvLog> CsvLog::create(const std::string& path, std::vector<std::string> columns) {
  POSEIDON_RETURN_IF_ERROR(checkColumns(path, columns));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errnoStatus(StatusCode::kIoError, path + ": cannot create");
  CsvLog log(path, std::move(columns), fd);
  log.line_ = fmt::format("{}\n", fmt::join(log.columns_, ","));
  POSEIDON_RETURN_IF_ERROR(log.writeLine());
  return log;
}

Status CsvLog::append(std::span<const double> values) {
  if (fd_ < 0) return makeStatus(StatusCode::kInvalidArgument, "{}: append to a closed CSV log", path_);
  if (values.size() != columns_.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "{}: a row of {} values, expected {} ({})", path_, values.size(),
                      columns_.size(), fmt::join(columns_, ","));
  }
  line_.clear();
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) line_.push_back(',');
    fmt::format_to(std::back_inserter(line_), "{}", values[i]);
  }
  line_.push_back('\n');
  return writeLine();
}

Status CsvLog::writeLine() {
  size_t written = 0;
  while (written < line_.size()) {
    const ssize_t n = ::write(fd_, line_.data() + written, line_.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errnoStatus(StatusCode::kIoError, path_ + ": write failed");
    written += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace poseidon::trainer::timeline
