// Worker 0's progress on stderr: one line, rewritten in place (\r) on a terminal; on a pipe or a
// file a line every `every` steps instead, so a log stays readable.
//   epoch 1/3  step 420/937  loss 0.4312  1234 img/s  PS 1.2 MB  SFB 3.4 MB
#pragma once

#include <cstdint>
#include <string>

namespace poseidon::tools {

struct ProgressState {
  uint64_t epoch = 0;  // 1-based
  uint64_t epochs = 0;
  uint64_t step = 0;  // 1-based within the epoch
  uint64_t steps = 0;
  double loss = 0;
  double images_per_s = 0;
  std::string bytes;  // SchemeBytes::describe()
};

class ProgressLine {
 public:
  // `every`: steps between lines when stderr is not a terminal.
  explicit ProgressLine(uint64_t every);
  void update(const ProgressState& state);
  // A line of its own ("epoch 1: test accuracy ..."), after ending the in-place line.
  void print(const std::string& line);

 private:
  bool terminal_;
  uint64_t every_;
  bool dirty_ = false;  // an in-place line is showing
};

}  // namespace poseidon::tools
