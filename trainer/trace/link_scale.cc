#include "trainer/trace/link_scale.h"

#include <algorithm>
#include <cmath>

namespace poseidon::trainer::trace {

namespace {

uint64_t scaledCount(double count, double divisor) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(count / divisor)));
}

Status checkFactor(double factor) {
  if (!std::isfinite(factor) || factor < 1) {
    return makeStatus(StatusCode::kInvalidArgument, "scale factor {}: expected a finite number >= 1", factor);
  }
  return Status::ok();
}

}  // namespace

Result<LinkScale> chooseLinkScale(double real_bps, double cap_bps) {
  if (!std::isfinite(real_bps) || real_bps <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "link rate {} bit/s: expected a positive rate", real_bps);
  }
  if (!std::isfinite(cap_bps) || cap_bps <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "rate cap {} bit/s: expected a positive rate", cap_bps);
  }
  LinkScale scale{.real_bps = real_bps, .cap_bps = cap_bps};
  scale.factor = std::max(1.0, real_bps / cap_bps);
  scale.scaled_bps = real_bps / scale.factor;
  return scale;
}

Result<model::Layer> scaleLayer(const model::Layer& layer, double factor) {
  POSEIDON_RETURN_IF_ERROR(checkFactor(factor));
  POSEIDON_RETURN_IF_ERROR(layer.validate());
  const double root = std::sqrt(factor);
  switch (layer.kind()) {
    case model::LayerKind::kFullyConnected: {
      const model::FcShape& fc = layer.fc();
      return model::Layer::fullyConnected(layer.name(), scaledCount(static_cast<double>(fc.rows), root),
                                          scaledCount(static_cast<double>(fc.cols), root), fc.bias);
    }
    case model::LayerKind::kConvolution: {
      model::ConvShape conv{.out_channels = scaledCount(static_cast<double>(layer.params()), factor),
                            .in_channels = 1,
                            .kernel_h = 1,
                            .kernel_w = 1,
                            .out_h = 1,
                            .out_w = 1};
      return model::Layer::convolution(layer.name(), conv);
    }
    case model::LayerKind::kOther: break;
  }
  return model::Layer::other(layer.name(), scaledCount(static_cast<double>(layer.params()), factor));
}

uint64_t scaledBatch(uint64_t batch, double factor) {
  return scaledCount(static_cast<double>(batch), std::sqrt(std::max(1.0, factor)));
}

uint64_t scaledChunkBytes(uint64_t bytes, double factor) {
  constexpr uint64_t kMinChunk = 4096;
  const uint64_t scaled = static_cast<uint64_t>(static_cast<double>(bytes) / std::max(1.0, factor)) / 4 * 4;
  return std::min(bytes, std::max(kMinChunk, scaled));
}

}  // namespace poseidon::trainer::trace
