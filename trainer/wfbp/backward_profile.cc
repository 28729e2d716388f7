#include "trainer/wfbp/backward_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "trainer/wfbp/median.h"

namespace poseidon::trainer {

namespace {

// Why `iteration` cannot be used, or nullopt when it can.
std::optional<std::string> unusable(const BackwardIteration& iteration, size_t layer_count) {
  if (iteration.reported.size() != layer_count) {
    return fmt::format("it has {} layers, expected {}", iteration.reported.size(), layer_count);
  }
  Clock::time_point previous = iteration.backward_start;
  for (size_t i = 0; i < layer_count; ++i) {
    if (!iteration.reported[i]) return fmt::format("layer {} (backward order) was not reported", i);
    if (*iteration.reported[i] < previous) {
      return fmt::format("layer {} (backward order) was reported {} ns before {}", i,
                         std::chrono::nanoseconds(previous - *iteration.reported[i]).count(),
                         i == 0 ? std::string("the backward start") : fmt::format("layer {}", i - 1));
    }
    previous = *iteration.reported[i];
  }
  return std::nullopt;
}

}  // namespace

Result<BackwardProfile> profileBackward(std::span<const BackwardIteration> iterations, size_t layer_count) {
  if (layer_count == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "backward profile: 0 layers, expected at least 1");
  }
  BackwardProfile profile;
  std::vector<std::vector<double>> samples(layer_count);  // per layer, one per usable iteration
  for (size_t it = 0; it < iterations.size(); ++it) {
    if (auto why = unusable(iterations[it], layer_count)) {
      profile.skipped.push_back(fmt::format("iteration {}: {}", it, *why));
      continue;
    }
    Clock::time_point previous = iterations[it].backward_start;
    for (size_t i = 0; i < layer_count; ++i) {
      samples[i].push_back(std::chrono::duration<double>(*iterations[it].reported[i] - previous).count());
      previous = *iterations[it].reported[i];
    }
    ++profile.iterations_used;
  }
  if (profile.iterations_used == 0) {
    return makeStatus(StatusCode::kInvalidArgument, "backward profile: no usable iteration of {}{}{}",
                      iterations.size(), profile.skipped.empty() ? "" : "; ",
                      profile.skipped.empty() ? std::string() : profile.skipped.front());
  }
  profile.backward_s.reserve(layer_count);
  for (std::vector<double>& layer : samples) profile.backward_s.push_back(median(layer));
  return profile;
}

}  // namespace poseidon::trainer
