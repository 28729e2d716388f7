// Scheme: the ways one layer's gradients can be synchronised in an iteration.
//
// The paper's HybComm chooses between kPs and kSfb; kAdam and kRing are here so the cost model can
// price the alternatives the papers compare against ([Poseidon 2015] section 4.3.1, [Poseidon analysis] section 8).
#pragma once

#include <string_view>

namespace poseidon::scheme {

enum class Scheme {
  kPs,    // push the full gradient to the sharded parameter server, pull the model back
  kSfb,   // broadcast the sufficient factors U, V to every peer; each peer rebuilds sum U V^T
  kAdam,  // push U, V to the one server holding the layer; it rebuilds and sends the full matrix back
  kRing,  // ring all-reduce of the full gradient (reduce-scatter then all-gather)
};

constexpr std::string_view schemeName(Scheme scheme) {
  switch (scheme) {
    case Scheme::kPs: return "PS";
    case Scheme::kSfb: return "SFB";
    case Scheme::kAdam: return "Adam";
    case Scheme::kRing: return "ring";
  }
  return "?";
}

}  // namespace poseidon::scheme
