#include "trainer/hybcomm/hybcomm.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace poseidon::trainer {

using scheme::Scheme;

namespace {

size_t indexOf(scheme::Scheme scheme) { return static_cast<size_t>(scheme); }

constexpr double kNone = -1.0;  // "not measured" in an agreed vector (max keeps any real time)

std::string seconds(double s) { return fmt::format("{:.4g} s", s); }

// The workers' combined vector, checked to be as long as what this worker sent.
Result<std::vector<double>> agreeOn(const Agree& agree, std::span<const double> mine) {
  auto agreed = agree(mine);
  if (!agreed) return agreed.status();
  if (agreed->size() != mine.size()) {
    return makeStatus(StatusCode::kInternal, "HybComm agreement returned {} values for {} sent", agreed->size(),
                      mine.size());
  }
  return agreed;
}

void keepFastest(double& fastest, double seconds_taken) {
  fastest = fastest > 0 ? std::min(fastest, seconds_taken) : seconds_taken;
}

}  // namespace

bool HybComm::applies(scheme::Scheme scheme, const model::Layer& layer) {
  return layer.isFullyConnected() || scheme == scheme::Scheme::kPs || scheme == scheme::Scheme::kRing;
}

Result<HybComm> HybComm::create(std::vector<model::Layer> layers, const trainer::ClusterShape& cluster,
                                const HybCommOptions& options) {
  if (layers.empty()) return makeStatus(StatusCode::kInvalidArgument, "HybComm needs at least one layer");
  auto decisions = trainer::bestSchemes(layers, cluster, options.closed_form);
  if (!decisions) return decisions.status();
  if (options.mode == HybCommMode::kAdaptive) {
    if (options.candidates.empty()) {
      return makeStatus(StatusCode::kInvalidArgument, "adaptive HybComm needs at least one candidate scheme");
    }
    for (size_t i = 0; i < options.candidates.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (options.candidates[i] == options.candidates[j]) {
          return makeStatus(StatusCode::kInvalidArgument, "candidate scheme {} is listed twice",
                            scheme::schemeName(options.candidates[i]));
        }
      }
    }
    if (options.trial_iterations < 1 || options.window < 1) {
      return makeStatus(StatusCode::kInvalidArgument, "trial iterations {} and window {} must both be >= 1",
                        options.trial_iterations, options.window);
    }
    if (!(options.drift_margin > 0) || !std::isfinite(options.drift_margin)) {
      return makeStatus(StatusCode::kInvalidArgument, "drift margin {} is not a finite fraction > 0",
                        options.drift_margin);
    }
  }
  if (options.mode == HybCommMode::kFixed &&
      std::none_of(layers.begin(), layers.end(), [&](const auto& l) { return applies(options.fixed, l); })) {
    return makeStatus(StatusCode::kInvalidArgument, "fixed scheme {} applies to none of the {} layers",
                      scheme::schemeName(options.fixed), layers.size());
  }

  HybComm hybcomm(std::move(layers), options);
  for (size_t l = 0; l < hybcomm.layers_.size(); ++l) {
    hybcomm.state_[l].closed_form = (*decisions)[l].scheme;
    hybcomm.state_[l].closed_form_reason = (*decisions)[l].reason;
  }
  for (size_t l = 0; l < hybcomm.layers_.size(); ++l) {
    const LayerState& state = hybcomm.state_[l];
    const model::Layer& layer = hybcomm.layers_[l];
    switch (options.mode) {
      case HybCommMode::kClosedForm:
        hybcomm.setScheme(l, state.closed_form, state.closed_form_reason + " (closed form)");
        break;
      case HybCommMode::kFixed:
        if (applies(options.fixed, layer)) {
          hybcomm.setScheme(l, options.fixed,
                            fmt::format("{}: {} (fixed)", layer.name(), scheme::schemeName(options.fixed)));
        } else {
          hybcomm.setScheme(l, scheme::Scheme::kPs,
                            fmt::format("{}: PS (fixed {} needs a fully-connected layer)", layer.name(),
                                        scheme::schemeName(options.fixed)));
        }
        break;
      case HybCommMode::kAdaptive: hybcomm.state_[l].retiming = true; break;
    }
  }
  if (options.mode == HybCommMode::kAdaptive) {
    hybcomm.phase_ = Phase::kTrial;
    hybcomm.enterTrialSlot(0);
  }
  return hybcomm;
}

HybComm::HybComm(std::vector<model::Layer> layers, HybCommOptions options)
    : layers_(std::move(layers)),
      options_(std::move(options)),
      state_(layers_.size()),
      candidate_totals_(options_.candidates.size(), 0.0) {}

void HybComm::setScheme(size_t layer, scheme::Scheme scheme, std::string reason) {
  state_[layer].current = scheme;
  // The first choices are made whenever a HybComm is created (also just to ask which schemes a
  // job uses); whoever runs the job logs them once (HybridSync::start).
  if (iteration_ > 0) {
    spdlog::info("HybComm iteration {}: {}", iteration_, reason);
  } else {
    spdlog::debug("HybComm iteration {}: {}", iteration_, reason);
  }
  choices_.push_back({iteration_, layer, scheme, std::move(reason)});
}

void HybComm::enterTrialSlot(int slot) {
  const scheme::Scheme candidate = options_.candidates[static_cast<size_t>(slot / options_.trial_iterations)];
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = state_[l];
    if (!state.retiming) continue;
    // A candidate that cannot carry this layer: the layer goes its closed-form way, untimed.
    state.current = applies(candidate, layers_[l]) ? candidate : state.closed_form;
  }
}

void HybComm::record(size_t layer, double seconds_taken, uint64_t bytes_sent, uint64_t bytes_received) {
  LayerState& state = state_[layer];
  SchemeCounters& counters = state.counters[indexOf(state.current)];
  ++counters.iterations;
  counters.seconds += seconds_taken;
  counters.bytes_sent += bytes_sent;
  counters.bytes_received += bytes_received;
  iteration_seconds_ += seconds_taken;
  if (phase_ == Phase::kTrial && state.retiming) {
    const int slot = static_cast<int>(iteration_ - phase_start_);
    const scheme::Scheme candidate = options_.candidates[static_cast<size_t>(slot / options_.trial_iterations)];
    if (state.current != candidate) return;  // standing in for a candidate that does not apply
    keepFastest(state.fastest[indexOf(candidate)], seconds_taken);
    return;
  }
  if (phase_ == Phase::kConfirm && state.retiming) return;  // only the iteration's total counts
  state.window_seconds += seconds_taken;
  ++state.window_count;
}

const SchemeCounters& HybComm::counters(size_t layer, scheme::Scheme scheme) const {
  return state_[layer].counters[indexOf(scheme)];
}

Status HybComm::endIteration(const Agree& agree) {
  ++iteration_;
  const double total = std::exchange(iteration_seconds_, 0.0);
  if (options_.mode != HybCommMode::kAdaptive) return Status::ok();
  const uint64_t elapsed = iteration_ - phase_start_;
  const auto per_candidate = static_cast<uint64_t>(options_.trial_iterations);
  if (phase_ == Phase::kTrial) {
    keepFastest(candidate_totals_[(elapsed - 1) / per_candidate], total);
    if (elapsed < options_.candidates.size() * per_candidate) {
      if (elapsed % per_candidate == 0) enterTrialSlot(static_cast<int>(elapsed));
      return Status::ok();
    }
    return decideTrials(agree);
  }
  if (phase_ == Phase::kConfirm) {
    keepFastest(mix_total_, total);
    if (elapsed < per_candidate) return Status::ok();
    return decideConfirm(agree);
  }
  if (elapsed < static_cast<uint64_t>(options_.window)) return Status::ok();
  return checkDrift(agree);
}

scheme::Scheme HybComm::uniform(size_t layer, scheme::Scheme candidate) const {
  return applies(candidate, layers_[layer]) ? candidate : state_[layer].closed_form;
}

Status HybComm::decideTrials(const Agree& agree) {
  const size_t candidates = options_.candidates.size();
  const size_t per_layer = layers_.size() * candidates;
  std::vector<double> mine(per_layer + candidates, kNone);
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!state_[l].retiming) continue;
    for (size_t c = 0; c < candidates; ++c) {
      const double fastest = state_[l].fastest[indexOf(options_.candidates[c])];
      if (fastest > 0) mine[l * candidates + c] = fastest;
    }
  }
  // The iteration as a whole under each candidate: a sync is as slow as its slowest worker.
  for (size_t c = 0; c < candidates; ++c) mine[per_layer + c] = candidate_totals_[c];
  auto agreed = agreeOn(agree, mine);
  if (!agreed) return agreed.status();
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = state_[l];
    if (!state.retiming) continue;
    // Cheapest first; ties keep the closed-form scheme, then the candidates' order.
    std::vector<std::pair<double, scheme::Scheme>> timed;
    for (size_t c = 0; c < candidates; ++c) {
      const double t = (*agreed)[l * candidates + c];
      if (t >= 0) timed.emplace_back(t, options_.candidates[c]);
    }
    std::stable_sort(timed.begin(), timed.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.second == state.closed_form && b.second != state.closed_form;
    });
    std::fill(std::begin(state.fastest), std::end(state.fastest), 0.0);
    if (timed.empty()) {  // no candidate applies: the closed form decides
      state.mixed = state.closed_form;
      state.ranking = state.closed_form_reason + " (no candidate applies)";
      continue;
    }
    state.ranking = fmt::format("{}: ", layers_[l].name());
    for (size_t i = 0; i < timed.size(); ++i) {
      if (i > 0) state.ranking += timed[i].first == timed[i - 1].first ? " = " : " < ";
      state.ranking += fmt::format("{} {}", scheme::schemeName(timed[i].second), seconds(timed[i].first));
    }
    state.ranking += fmt::format(" (measured: slowest worker, fastest of {} iterations; closed form: {})",
                                 options_.trial_iterations, scheme::schemeName(state.closed_form));
    state.mixed = timed.front().second;
  }

  // The fastest uniform candidate as a whole (ties: the candidates' order), and whether the mix
  // of every layer's own fastest is one of the uniform assignments, already timed as a whole.
  best_uniform_ = 0;
  for (size_t c = 1; c < candidates; ++c) {
    if ((*agreed)[per_layer + c] < (*agreed)[per_layer + best_uniform_]) best_uniform_ = c;
  }
  best_uniform_total_ = (*agreed)[per_layer + best_uniform_];
  std::fill(candidate_totals_.begin(), candidate_totals_.end(), 0.0);
  std::optional<size_t> mix_is;
  for (size_t c = 0; c < candidates && !mix_is; ++c) {
    bool same = true;
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (state_[l].retiming && state_[l].mixed != uniform(l, options_.candidates[c])) same = false;
    }
    if (same) mix_is = c;
  }
  const std::string_view best_name = scheme::schemeName(options_.candidates[best_uniform_]);
  if (mix_is) {
    const double mix_total = (*agreed)[per_layer + *mix_is];
    if (*mix_is == best_uniform_ || mix_total <= best_uniform_total_) {
      settle(true, "");
    } else {
      settle(false, fmt::format("; as a whole, all {} took {} per iteration against {} for all {}", best_name,
                                seconds(best_uniform_total_), seconds(mix_total),
                                scheme::schemeName(options_.candidates[*mix_is])));
    }
    return Status::ok();
  }
  // A mix no trial ran: time it as a whole before keeping it.
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (state_[l].retiming) state_[l].current = state_[l].mixed;
  }
  mix_total_ = 0;
  phase_ = Phase::kConfirm;
  phase_start_ = iteration_;
  return Status::ok();
}

Status HybComm::decideConfirm(const Agree& agree) {
  const std::vector<double> mine = {mix_total_};
  auto agreed = agreeOn(agree, mine);
  if (!agreed) return agreed.status();
  const double mix_total = agreed->front();
  std::string mix;
  for (size_t l = 0; l < layers_.size(); ++l) {
    if (!state_[l].retiming) continue;
    mix += fmt::format("{}{} {}", mix.empty() ? "" : ", ", layers_[l].name(), scheme::schemeName(state_[l].mixed));
  }
  const std::string_view best_name = scheme::schemeName(options_.candidates[best_uniform_]);
  const bool take_mix = mix_total <= best_uniform_total_;
  settle(take_mix,
         fmt::format("; as a whole, the mix ({}) took {} per iteration {} {} for all {}", mix, seconds(mix_total),
                     take_mix ? "against" : "and lost to", seconds(best_uniform_total_), best_name));
  return Status::ok();
}

void HybComm::settle(bool take_mix, const std::string& whole) {
  const scheme::Scheme best = options_.candidates[best_uniform_];
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = state_[l];
    if (!state.retiming) continue;
    state.retiming = false;
    state.window_seconds = 0;
    state.window_count = 0;
    state.reference = 0;
    const scheme::Scheme chosen = take_mix ? state.mixed : uniform(l, best);
    std::string reason = std::move(state.ranking) + whole;
    if (!take_mix) reason += fmt::format(": {}", scheme::schemeName(chosen));
    setScheme(l, chosen, std::move(reason));
  }
  phase_ = Phase::kSteady;
  phase_start_ = iteration_;
}

Status HybComm::checkDrift(const Agree& agree) {
  std::vector<double> mine(layers_.size(), kNone);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerState& state = state_[l];
    if (state.window_count > 0) mine[l] = state.window_seconds / static_cast<double>(state.window_count);
  }
  auto agreed = agreeOn(agree, mine);
  if (!agreed) return agreed.status();
  bool any = false;
  for (size_t l = 0; l < layers_.size(); ++l) {
    LayerState& state = state_[l];
    state.window_seconds = 0;
    state.window_count = 0;
    const double mean = (*agreed)[l];
    if (mean < 0) continue;
    // The first window after a decision sets the reference: the trial's fastest-of-n time is
    // biased low against a mean, so drift is measured mean against mean.
    if (state.reference <= 0) {
      state.reference = mean;
      continue;
    }
    const double drift = mean / state.reference - 1.0;
    if (std::abs(drift) <= options_.drift_margin) continue;
    spdlog::info(
        "HybComm iteration {}: {}: {} took {} per iteration over the last {}, {:+.0f}% against its {}: "
        "timing the candidates again",
        iteration_, layers_[l].name(), scheme::schemeName(state.current), seconds(mean), options_.window, drift * 100,
        seconds(state.reference));
    state.retiming = true;
    any = true;
  }
  phase_start_ = iteration_;
  if (any) {
    phase_ = Phase::kTrial;
    enterTrialSlot(0);
  }
  return Status::ok();
}

}  // namespace poseidon::trainer
