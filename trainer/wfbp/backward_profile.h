// Per-layer backward compute times, measured from when the trainer reported each layer
// (gradientReady) in the first iterations: what the merge planner needs as t_b^(l) ([MG-WFBP]
// Algorithm 1 takes them from "benchmarks in the first several iterations", section IV-B).
//
// A layer's time is the gap between its report and the previous layer's (the first layer's: from
// the iteration's backward start), so it includes whatever the trainer's thread did in between
// (the report call itself, a framework's hooks): what the communication can overlap with.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/deadline.h"
#include "common/status.h"

namespace poseidon::trainer {

struct BackwardIteration {
  Clock::time_point backward_start{};
  // One entry per layer in backward order (the order reported); nullopt: the layer was not reported
  // (an iteration cut short, a lost record).
  std::vector<std::optional<Clock::time_point>> reported;
};

struct BackwardProfile {
  std::vector<double> backward_s;  // per layer, backward order: the median over the iterations used
  size_t iterations_used = 0;
  std::vector<std::string> skipped;  // one line per iteration left out, naming it and why
};

// The median per layer over the iterations that are complete and in order. An iteration is left
// out (and named in `skipped`), not fatal, when it has a different number of layers, a layer not
// reported, or a report earlier than the one before it (or than its backward start): one bad
// iteration must not stop the profile. Fails when `layer_count` is 0 or no iteration is usable
// (naming why the first was left out).
Result<BackwardProfile> profileBackward(std::span<const BackwardIteration> iterations, size_t layer_count);

}  // namespace poseidon::trainer
