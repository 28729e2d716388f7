// The per-iteration CSV: the header once, a row per append in the shortest exact form, bad
// columns and rows refused by name, and a run killed mid-write leaving only whole rows.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <sstream>

#include "tests/support/mesh.h"
#include "tests/support/process.h"
#include "trainer/timeline/csv_log.h"

namespace poseidon::trainer::timeline {
namespace {

using poseidon::testing::read_file;
using poseidon::testing::TempDir;

const std::vector<std::string> kColumns = {"iteration", "seconds", "loss", "train_accuracy", "images_per_second"};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(CsvLog, HeaderAndRows) {
  TempDir dir;
  const std::string path = dir.path() + "/run.csv";
  Result<CsvLog> log = CsvLog::create(path, kColumns);
  ASSERT_TRUE(log) << log.status().toString();
  EXPECT_EQ(read_file(path), "iteration,seconds,loss,train_accuracy,images_per_second\n");  // before any row
  ASSERT_TRUE(log->append(std::vector<double>{1, 0.25, 2.302585, 0.1, 1536.5}).isOk());
  ASSERT_TRUE(log->append(std::vector<double>{2, 0.5, NAN, 1.0 / 3, 1e9}).isOk());
  // Read while the log is still open: every row is on disk already.
  const std::vector<std::string> rows = lines(read_file(path));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1], "1,0.25,2.302585,0.1,1536.5");
  EXPECT_EQ(rows[2], "2,0.5,nan,0.3333333333333333,1000000000");
}

TEST(CsvLog, RefusesBadColumnsAndRows) {
  TempDir dir;
  const std::string path = dir.path() + "/bad.csv";
  auto refused = [](const Status& status, const std::string& part) {
    ASSERT_FALSE(status.isOk());
    EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  };
  refused(CsvLog::create(path, {}).status(), "no columns");
  refused(CsvLog::create(path, {"loss", "a,b"}).status(), "column name \"a,b\"");
  refused(CsvLog::create(path, {"loss", "loss"}).status(), "column \"loss\" declared twice");
  refused(CsvLog::create(dir.path() + "/no/such/dir.csv", {"loss"}).status(), "cannot create");
  Result<CsvLog> log = CsvLog::create(path, {"iteration", "loss"});
  ASSERT_TRUE(log);
  refused(log->append(std::vector<double>{1}), "a row of 1 values, expected 2 (iteration,loss)");
}

TEST(CsvLog, KilledRunLeavesAValidPrefix) {
  TempDir dir;
  const std::string path = dir.path() + "/killed.csv";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Result<CsvLog> log = CsvLog::create(path, kColumns);
    if (!log) ::_exit(3);
    for (double i = 0;; ++i) {
      if (!log->append(std::vector<double>{i, i * 0.001, 1.0 / (i + 1), 0.5, 12345.678}).isOk()) ::_exit(4);
    }
  }
  // Let it write a good many rows, then kill it mid-stream.
  for (int waited = 0; waited < 500 && lines(read_file(path)).size() < 2000; ++waited) ::usleep(10000);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended by itself, status " << status;
  std::string text = read_file(path);
  ASSERT_FALSE(text.empty());
  // The row being written when the kill came may be cut short, without its line break; the rest
  // are whole.
  if (text.back() != '\n') text.erase(text.rfind('\n') + 1);
  const std::vector<std::string> rows = lines(text);
  ASSERT_GE(rows.size(), 2000u);
  EXPECT_EQ(rows[0], "iteration,seconds,loss,train_accuracy,images_per_second");
  for (size_t r = 1; r < rows.size(); ++r) {
    ASSERT_EQ(std::count(rows[r].begin(), rows[r].end(), ','), 4) << "row " << r << ": " << rows[r];
    ASSERT_EQ(rows[r].substr(0, rows[r].find(',')), std::to_string(r - 1)) << "row " << r;
  }
}

}  // namespace
}  // namespace poseidon::trainer::timeline
