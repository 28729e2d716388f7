// MergeOptions: whether and how the trainer's layers are merged into fewer messages ([MG-WFBP]),
// and the plan they give for a model (SyncUnits).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model/model.h"
#include "trainer/wfbp/merge_plan.h"
#include "trainer/wfbp/message_cost.h"
#include "trainer/wfbp/sync_units.h"

namespace poseidon::trainer {

struct MergeOptions {
  enum class Mode {
    kOff,      // every layer its own message (plain WFBP)
    kFixed,    // `groups`, as given
    kPlanned,  // [MG-WFBP]'s optimal groups for `backward_seconds` and `cost`
  };
  Mode mode = Mode::kOff;
  // kFixed: positions in backward order (0: the output layer, the first to report), e.g.
  // "0,1,2-9" (merge_plan_text.h).
  std::string groups;
  // kPlanned: each layer's backward compute, output layer first (the trainer's profile: the time
  // between one layer's gradientReady and the next's), and the message cost T(M) = a + bM of the
  // scheme the merged layers go to (cost_fit.h fits it from probes or derives it from a link).
  std::vector<double> backward_seconds;
  MessageCost cost;
};

// "off", "fixed:<groups>" or "planned": the Mode and, for fixed, the groups (checked against the
// model at planning). Names the text and what was expected.
Result<MergeOptions> parseMergeMode(std::string_view text);

struct MergeSetup {
  SyncUnits units;
  std::optional<MergePlan> plan;  // fixed and planned: the groups with their predicted times
};

// The units the options give for `layers` (the trainer's model, input to output). FC layers are
// never merged: SFB may carry them, and their factors are no plain tensor. Fails naming the
// option's value and what was expected.
Result<MergeSetup> planMergeUnits(const model::Model& layers, const MergeOptions& options);

}  // namespace poseidon::trainer
