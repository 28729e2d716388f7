// The MG-WFBP merge planner: the groups of consecutive layers whose gradients travel as one
// message so that the iteration ends earliest ([MG-WFBP] section III, the problem of Eq. 23).
//
// [MG-WFBP] Algorithm 1 solves it greedily: walking from layer L down, it merges layer l into
// l-1 whenever l's communication would start less than a before l-1 is ready (Theorem 1, Eq. 27).
// Theorem 1's proof compares one merge against not merging with the rest held fixed, and the
// greedy choice is not optimal in general: on backward times (3, 1, 3) s, sizes (1, 2, 1) bytes
// and T(M) = 3 + M, it merges the first two layers (14 s) where merging the last two gives 13 s
// (tests/trainer/wfbp/merge_planner_test.cc keeps the case). planMerge solves the same problem
// exactly, in the same O(L^2): the earliest end of the first e layers' messages, over where their
// last group starts, depends only on the earliest end of the layers before that group (a later
// end can never make a later message end sooner), so a dynamic program over e is optimal.
#pragma once

#include <span>

#include "common/status.h"
#include "trainer/wfbp/merge_plan.h"

namespace poseidon::trainer {

// The plan of least predicted time. A merge is taken only when it saves more than rounding, so
// with a = 0 (where merging never saves anything) every layer is its own group. Fails as
// validateMergeInput does.
Result<MergePlan> planMerge(std::span<const MergeLayer> layers, const MessageCost& cost);

}  // namespace poseidon::trainer
