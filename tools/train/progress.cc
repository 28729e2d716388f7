#include "tools/train/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace poseidon::tools {

ProgressLine::ProgressLine(uint64_t every)
    : terminal_(isatty(STDERR_FILENO) != 0), every_(std::max<uint64_t>(every, 1)) {}

void ProgressLine::update(const ProgressState& s) {
  const bool last = s.step == s.steps;
  if (!terminal_ && s.step % every_ != 0 && !last) return;
  const std::string text = fmt::format("epoch {}/{}  step {}/{}  loss {:.4f}  {:.0f} img/s  {}", s.epoch, s.epochs,
                                       s.step, s.steps, s.loss, s.images_per_s, s.bytes);
  if (terminal_) {
    // \033[K clears what a longer previous line left.
    fmt::print(stderr, "\r{}\033[K", text);
    dirty_ = true;
  } else {
    fmt::print(stderr, "{}\n", text);
  }
  std::fflush(stderr);
}

void ProgressLine::print(const std::string& line) {
  if (dirty_) fmt::print(stderr, "\n");
  dirty_ = false;
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

}  // namespace poseidon::tools
