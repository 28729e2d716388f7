// A reference Network (network.h) registered with a Session, layer by layer: the glue
// poseidon-train, the benchmarks and the tests use (examples/ spells the same calls out by hand).
//
// Fully-connected layers switch to factors-only mode and register their input X and output
// gradient dY as the sufficient factors (the library forms, or never forms, dW = dY^T X);
// convolutions register their gradient. The hooks make the network's forward pass wait for each
// layer's parameters and its backward pass report each layer's gradient: wait-free
// backpropagation through the Network's two hooks.
#pragma once

#include <functional>

#include "common/status.h"
#include "trainer/api/session.h"
#include "trainer/reference/network.h"

namespace poseidon::trainer::reference {

Status registerNetwork(trainer::Session& session, Network& network);

// Hooks that call the session; `observe` (optional) sees each call's layer and phase before and
// after it, for a timeline.
enum class HookPhase { kWaitBegin, kWaitEnd, kReady };
NetworkHooks sessionHooks(trainer::Session& session, std::function<void(HookPhase, size_t layer)> observe = {});

}  // namespace poseidon::trainer::reference
