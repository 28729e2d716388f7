// BestScheme: the papers' closed-form choice of how to synchronise each layer.
//
// [Poseidon analysis] section 4.2 ([Poseidon ATC'17] Algorithm 1): an FC layer goes SFB when
//   2K(P1-1)(M+N) <= 2MN(P1+P2-2)/P2      (per-node floats, ties go SFB)
// and PS otherwise; every other layer goes PS. [Poseidon 2015] Algorithm 3 (SACP) instead weighs
// SFB against pushing the factors to a master that sends full matrices back, on its cluster totals:
//   (P-1)^2 K(M+N) <= PK(M+N) + PMN.
// Both are pure functions of (layer, P1, P2, K): no measurement, which is the limit [Poseidon analysis]
// section 8 names (no response to congestion). The ring and Adam prices are opt-in so the default
// reproduces the paper's decisions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/layer.h"
#include "scheme/scheme.h"
#include "trainer/hybcomm/cost_model.h"

namespace poseidon::trainer {

enum class Rule {
  kAtc17,     // [Poseidon ATC'17] Algorithm 1: SFB vs PS on the busiest node's sent + received floats
  kSacp2015,  // [Poseidon 2015] Algorithm 3: SFB vs Adam-style on its section 4.3.1 totals (Poseidon2015Totals)
};

struct BestSchemeOptions {
  Rule rule = Rule::kAtc17;
  // ATC'17 rule only: also price ring all-reduce (any layer) and Adam-style (FC; its server,
  // the busiest node). One wins only when strictly cheaper than the paper's choice.
  bool consider_ring = false;
  bool consider_adam = false;
};

struct PricedScheme {
  scheme::Scheme scheme = scheme::Scheme::kPs;
  // kAtc17: floats the busiest node sends + receives (busiestNodeTraffic). kSacp2015: the
  // [Poseidon 2015] total for that scheme (PS: 2P times the layer's floats).
  double floats = 0;
};

struct Decision {
  std::string layer;
  scheme::Scheme scheme = scheme::Scheme::kPs;
  double floats = 0;                 // the chosen scheme's price, as in PricedScheme
  std::vector<PricedScheme> priced;  // every scheme considered, cheapest first, ties in preference order
  std::string reason;                // "fc6: SFB 28.02M floats < PS 385.35M floats"
};

// Fails, naming the value, for an invalid layer or cluster (model::Layer::validate,
// validateCluster), or
// ring/Adam options with the SACP rule (it already weighs SFB against Adam and knows no ring).
Result<Decision> bestScheme(const model::Layer& layer, const ClusterShape& cluster,
                            const BestSchemeOptions& options = {});

// One decision per layer, in order; fails on the first invalid layer, naming it.
Result<std::vector<Decision>> bestSchemes(std::span<const model::Layer> layers, const ClusterShape& cluster,
                                          const BestSchemeOptions& options = {});

}  // namespace poseidon::trainer
