// HybComm: which scheme synchronises each layer in each iteration.
//
// Three modes:
// - closed form: the papers' BestScheme (sfb/best_scheme.h) once per layer, from P1, P2, K and
//   the layer's shape. It never measures, so it cannot see a slow or contended link, the cost of
//   rebuilding U V^T, or a latency-bound small layer ([Poseidon analysis] section 8 names this limit).
// - adaptive: every layer is timed under each candidate scheme for a few iterations (a trial
//   phase, all layers at once), and each layer's fastest makes a mix. Layers synced one after
//   another are not independent (a slow worker's late finish of one layer shows up as waiting in
//   the next one's sync), so a mix that no trial ran as a whole is then timed as a whole for as
//   many iterations (the confirm phase) and kept only if its iteration beats the best uniform
//   candidate's. While it runs, each window of iterations a layer's mean time is compared with
//   its first steady window, and a layer that drifted by more than the margin is timed again. Decisions must be
//   identical on every worker or the schemes deadlock (one worker pushing to the PS while its peers broadcast factors),
//   so they are taken only from measurements every worker has: at each decision point the workers exchange their
//   timings (`Agree`, element-wise max: a sync is as slow as its slowest worker) and apply the
//   same rule to the same numbers.
// - fixed: one scheme for every layer it applies to (the baselines of the benchmark).
//
// Pure bookkeeping: no threads, no transport. The caller syncs the layers with scheme(layer),
// record()s what each took, and calls endIteration() once per iteration on every worker.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/layer.h"
#include "scheme/scheme.h"
#include "trainer/hybcomm/best_scheme.h"
#include "trainer/hybcomm/cluster_shape.h"

namespace poseidon::trainer {

enum class HybCommMode { kClosedForm, kAdaptive, kFixed };

struct HybCommOptions {
  HybCommMode mode = HybCommMode::kClosedForm;
  trainer::BestSchemeOptions closed_form;  // rule, and whether ring / Adam are priced
  // Adaptive: the schemes timed. SFB and Adam apply to fully-connected layers only; a layer
  // they do not apply to spends their trial iterations on its closed-form scheme, untimed.
  std::vector<scheme::Scheme> candidates = {scheme::Scheme::kPs, scheme::Scheme::kSfb, scheme::Scheme::kRing};
  // Iterations each candidate is timed for; the fastest of them counts, so the first one may
  // pay for warm-up (first touch of buffers, TCP slow start) without deciding anything.
  int trial_iterations = 2;
  // A layer is timed again when its mean over a window differs from the time it won with by more
  // than this fraction, either way (slower: the link got worse; faster: maybe another scheme did
  // even better).
  double drift_margin = 0.25;
  int window = 8;                              // iterations per drift check
  scheme::Scheme fixed = scheme::Scheme::kPs;  // kFixed; layers it does not apply to go PS
};

// Combines a vector of per-worker numbers into the same vector on every worker (element-wise
// max over the workers). Called at the same iterations on every worker, with equal lengths.
using Agree = std::function<Result<std::vector<double>>(std::span<const double> mine)>;

// What one layer has done under one scheme so far (this worker's view).
struct SchemeCounters {
  uint64_t iterations = 0;
  double seconds = 0;  // sum of recorded sync times
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
};

// A change of a layer's scheme, and why: the log line and the counters' history.
struct Choice {
  uint64_t iteration = 0;  // the first iteration that uses it
  size_t layer = 0;
  scheme::Scheme scheme = scheme::Scheme::kPs;
  std::string reason;  // "fc6: SFB 0.41 s < PS 1.93 s < ring 2.02 s (measured, slowest worker)"
};

class HybComm {
 public:
  // Fails, naming the value, for an invalid layer or cluster, an empty or duplicated candidate
  // list, trial_iterations or window < 1, a margin that is not positive, or a fixed scheme that
  // applies to no layer.
  static Result<HybComm> create(std::vector<model::Layer> layers, const trainer::ClusterShape& cluster,
                                const HybCommOptions& options);

  size_t layerCount() const { return layers_.size(); }
  const model::Layer& layer(size_t index) const { return layers_[index]; }
  uint64_t iteration() const { return iteration_; }
  // The scheme `layer` uses in the current iteration.
  scheme::Scheme scheme(size_t layer) const { return state_[layer].current; }
  // Whether `scheme` can synchronise `layer` at all (SFB and Adam need an FC layer).
  static bool applies(scheme::Scheme scheme, const model::Layer& layer);

  // One sync of `layer` in the current iteration with its current scheme took `seconds`.
  void record(size_t layer, double seconds, uint64_t bytes_sent, uint64_t bytes_received);
  // Closes the iteration. Adaptive: at the end of a trial phase or of a window, calls `agree`
  // once (every worker reaches the same points) and decides; an error from it is returned.
  Status endIteration(const Agree& agree);

  const std::vector<Choice>& choices() const { return choices_; }
  // Counters of `layer` under `scheme`.
  const SchemeCounters& counters(size_t layer, scheme::Scheme scheme) const;
  // Whether the adaptive mode is timing candidates (or a mix of them) in the current iteration.
  bool inTrial() const { return phase_ != Phase::kSteady; }

 private:
  enum class Phase { kTrial, kConfirm, kSteady };
  static constexpr size_t kSchemes = 4;  // scheme::Scheme values, indexing per-scheme arrays

  struct LayerState {
    scheme::Scheme current = scheme::Scheme::kPs;
    scheme::Scheme closed_form = scheme::Scheme::kPs;
    std::string closed_form_reason;
    bool retiming = false;                       // takes part in the current trial (and confirm) phase
    double fastest[kSchemes] = {};               // this trial phase: fastest recorded time per candidate (0: none)
    scheme::Scheme mixed = scheme::Scheme::kPs;  // confirm phase: the layer's own fastest, and why
    std::string ranking;
    double reference = 0;       // agreed mean of the first window after the decision (0: not yet)
    double window_seconds = 0;  // this window's recorded time and count
    uint64_t window_count = 0;
    SchemeCounters counters[kSchemes];
  };

  HybComm(std::vector<model::Layer> layers, HybCommOptions options);
  void setScheme(size_t layer, scheme::Scheme scheme, std::string reason);
  // Points every retiming layer at the candidate of trial slot `slot`.
  void enterTrialSlot(int slot);
  // The scheme `layer` has when every retiming layer goes `candidate` (where it applies).
  scheme::Scheme uniform(size_t layer, scheme::Scheme candidate) const;
  Status decideTrials(const Agree& agree);
  Status decideConfirm(const Agree& agree);
  // Ends a trial: every retiming layer takes its own fastest (`take_mix`) or the best uniform
  // candidate; `whole` says why, when the iteration totals decided.
  void settle(bool take_mix, const std::string& whole);
  Status checkDrift(const Agree& agree);

  std::vector<model::Layer> layers_;
  HybCommOptions options_;
  std::vector<LayerState> state_;
  std::vector<Choice> choices_;
  uint64_t iteration_ = 0;
  Phase phase_ = Phase::kSteady;
  uint64_t phase_start_ = 0;  // iteration the current trial phase or window began
  // This worker's recorded seconds over all layers in the current iteration, and per trial:
  // the fastest such iteration under each candidate (index as in options_.candidates) and under
  // the mix (0: none yet).
  double iteration_seconds_ = 0;
  std::vector<double> candidate_totals_;
  double mix_total_ = 0;
  size_t best_uniform_ = 0;        // confirm phase: the candidate whose iteration was fastest
  double best_uniform_total_ = 0;  // its agreed time
};

}  // namespace poseidon::trainer
