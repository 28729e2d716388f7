// A CSV file of per-iteration figures (iteration, seconds since start, loss, accuracy, images/s,
// bytes per scheme, ...): the columns declared once and written as the header line, then one row
// per append(), each with one write(2) straight to the file. A run killed at any moment leaves
// every row before whole; the one being written may be cut short (Linux copies a write page by
// page and stops at a kill between pages), and never ends in a line break then, so readers drop
// an unterminated last line (tools/plot-training does).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace poseidon::trainer::timeline {

class CsvLog {
 public:
  // Creates (truncates) `path` and writes the header. Column names are non-empty, unique, and
  // hold no comma, quote or line break.
  static Result<CsvLog> create(const std::string& path, std::vector<std::string> columns);

  CsvLog(CsvLog&& other) noexcept;
  CsvLog& operator=(CsvLog&& other) noexcept;
  ~CsvLog();

  // One row: a value per column, written in the shortest form that reads back to the same double
  // (an integral value has no decimal point; NaN is "nan").
  Status append(std::span<const double> values);

  const std::vector<std::string>& columns() const { return columns_; }
  const std::string& path() const { return path_; }

 private:
  CsvLog(std::string path, std::vector<std::string> columns, int fd);
  Status writeLine();

  std::string path_;
  std::vector<std::string> columns_;
  int fd_ = -1;
  std::string line_;  // reused: no allocation per row once it has grown
};

}  // namespace poseidon::trainer::timeline
