// LinkScale: a Titan X cluster's traffic shrunk to fit a small machine without changing what
// bounds an iteration. The model's bytes and the link's rate are divided by the same factor s, so
// every layer's time on the wire (bytes / rate) stays what it is on the real link, and with it
// the compute-to-communication ratio of a Titan X on the named Ethernet; compute is not scaled
// (a trace model sleeps for it: trainer/trace/trace_model.h). s is chosen so the scaled rate
// fits under a cap this machine can carry for every node at once.
//
// A layer is scaled by kind, keeping the ratios the schemes are priced by
// (trainer/hybcomm/cost_model.h) as well as the totals:
// - fully connected (M x N, batch K): M, N and K each by sqrt(s), so the PS's M*N and SFB's
//   K(M+N) both shrink by s and HybComm's closed form picks as it would on the real layer;
// - a convolution: its parameters by s, as one 1 x 1 convolution of that many output channels
//   (its shape only prices it; its compute stays the real layer's);
// - any other layer: its parameters by s, as one tensor.
// Every count is rounded and at least 1, so a tiny layer still syncs (and pays a message).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "model/layer.h"

namespace poseidon::trainer::trace {

struct LinkScale {
  double real_bps = 0;    // the named Ethernet, bits per second
  double cap_bps = 0;     // the most this machine's links are set to
  double factor = 1;      // s >= 1: real_bps / scaled_bps
  double scaled_bps = 0;  // the rate the links are limited to: min(real, cap)
};

// s = max(1, real / cap). Fails naming the value when a rate is not positive and finite.
Result<LinkScale> chooseLinkScale(double real_bps, double cap_bps);

// The layer as it travels at scale `factor` (see above): same name and kind. Fails for a factor
// below 1 or not finite, or an invalid layer.
Result<model::Layer> scaleLayer(const model::Layer& layer, double factor);
// K / sqrt(s), at least 1: the FC factors' batch at scale s.
uint64_t scaledBatch(uint64_t batch, double factor);
// The PS's chunk at scale s: bytes / s, a multiple of 4, at least 4 KiB (so a chunk is never
// mostly header), at most `bytes`.
uint64_t scaledChunkBytes(uint64_t bytes, double factor);

}  // namespace poseidon::trainer::trace
