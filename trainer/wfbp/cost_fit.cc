#include "trainer/wfbp/cost_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/layer.h"
#include "trainer/wfbp/median.h"

namespace poseidon::trainer {

namespace {

double rmsResidual(std::span<const ProbeSample> samples, const MessageCost& cost) {
  double sum = 0;
  for (const ProbeSample& s : samples) {
    const double residual = s.seconds - cost.seconds(s.bytes);
    sum += residual * residual;
  }
  return std::sqrt(sum / static_cast<double>(samples.size()));
}

// T(floats) of one tensor of `floats` float32 under the cost model.
Result<double> modelSeconds(scheme::Scheme scheme, const ClusterShape& cluster, const LinkModel& link, Duplex duplex,
                            uint64_t floats) {
  auto traffic = busiestNodeTraffic(scheme, model::Layer::other("merged", floats), cluster);
  if (!traffic) return traffic.status();
  return estimateSeconds(*traffic, link, duplex, sizeof(float));
}

// Theil-Sen takes every pair: up to 2M of them. A probe gives some tens of samples.
constexpr size_t kMaxSamples = 2048;

}  // namespace

Result<CostFit> fitMessageCost(std::span<const ProbeSample> samples) {
  if (samples.empty()) {
    return makeStatus(StatusCode::kInvalidArgument, "cost fit: no probe samples, expected timings of 2 sizes or more");
  }
  if (samples.size() > kMaxSamples) {
    return makeStatus(StatusCode::kInvalidArgument, "cost fit: {} probe samples, expected at most {}", samples.size(),
                      kMaxSamples);
  }
  bool distinct = false;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i].seconds) || samples[i].seconds < 0) {
      return makeStatus(StatusCode::kInvalidArgument,
                        "cost fit: probe sample {} ({} bytes) took {} s, expected a finite time >= 0", i,
                        samples[i].bytes, samples[i].seconds);
    }
    distinct = distinct || samples[i].bytes != samples[0].bytes;
  }
  if (!distinct) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "cost fit: every probe sample has the same size, {} bytes; a line T(M) = a + bM needs 2 "
                      "distinct sizes or more",
                      samples[0].bytes);
  }
  // Theil-Sen: the slope is the median of the slopes between every two samples of distinct sizes,
  // the intercept the median of what each sample leaves above that slope. A loaded machine only
  // ever adds time, and mostly to some sizes' samples (a preempted exchange): least squares
  // follows such a size and can tilt the line below zero latency; the medians follow the sizes
  // that ran clean (the line holds while fewer than about 3 in 10 samples are off: one size of the
  // probe's five, not two).
  std::vector<double> slopes;
  auto addSlope = [&](const ProbeSample& p, const ProbeSample& q) {
    if (p.bytes == q.bytes) return;
    slopes.push_back((q.seconds - p.seconds) / (static_cast<double>(q.bytes) - static_cast<double>(p.bytes)));
  };
  slopes.reserve(samples.size() * (samples.size() - 1) / 2);
  for (size_t i = 0; i < samples.size(); ++i) {
    for (size_t j = i + 1; j < samples.size(); ++j) addSlope(samples[i], samples[j]);
  }
  const double b = median(slopes);
  std::vector<double> intercepts;
  intercepts.reserve(samples.size());
  for (const ProbeSample& s : samples) intercepts.push_back(s.seconds - b * static_cast<double>(s.bytes));
  const double a = median(intercepts);
  CostFit fit;
  fit.samples = samples.size();
  if (b < 0) {
    std::vector<double> times;
    for (const ProbeSample& s : samples) times.push_back(s.seconds);
    fit.cost = {median(times), 0};
    fit.note = fmt::format(
        "slope {:.3g} s/B < 0 (time fell with size: the noise exceeds what the sizes probed show), clamped "
        "to b = 0, a = the median time",
        b);
  } else if (a < 0) {
    std::vector<double> rates;
    for (const ProbeSample& s : samples) {
      if (s.bytes > 0) rates.push_back(s.seconds / static_cast<double>(s.bytes));
    }
    fit.cost = {0, median(rates)};  // not empty: of two distinct sizes, one is > 0
    fit.note = fmt::format(
        "intercept {:.3g} s < 0 (latency below the noise), clamped to a = 0, b = the median of "
        "time / size",
        a);
  } else {
    fit.cost = {a, b};
  }
  fit.rms_residual_s = rmsResidual(samples, fit.cost);
  return fit;
}

Result<MessageCost> tensorMessageCost(scheme::Scheme scheme, const ClusterShape& cluster, const LinkModel& link,
                                      Duplex duplex) {
  if (scheme != scheme::Scheme::kPs && scheme != scheme::Scheme::kRing) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "T(M) of a plain tensor under {}: only PS and ring move a tensor; {} moves a layer's factors "
                      "(price such a layer with the cost model and plan it unmergeable)",
                      scheme::schemeName(scheme), scheme::schemeName(scheme));
  }
  // Two sizes give the line (both terms are linear in M; see the header). Powers of two keep the
  // per-server and per-step splits exact.
  constexpr uint64_t kSmall = uint64_t{1} << 20, kLarge = uint64_t{1} << 21;  // floats
  auto small = modelSeconds(scheme, cluster, link, duplex, kSmall);
  if (!small) return small.status();
  auto large = modelSeconds(scheme, cluster, link, duplex, kLarge);
  if (!large) return large.status();
  // T(2M) - T(M) = bM and 2T(M) - T(2M) = a, each one rounding from the cost model's values.
  const double small_bytes = static_cast<double>(kSmall * sizeof(float));
  return MessageCost{std::max(0.0, 2 * *small - *large), (*large - *small) / small_bytes};
}

Result<MessageCost> syncMessageCost(scheme::Scheme scheme, const ClusterShape& cluster, const LinkModel& link,
                                    Duplex duplex) {
  if (scheme != scheme::Scheme::kPs) return tensorMessageCost(scheme, cluster, link, duplex);
  POSEIDON_RETURN_IF_ERROR(validateCluster(cluster));
  if (!std::isfinite(link.latency_s) || link.latency_s < 0) {
    return makeStatus(StatusCode::kInvalidArgument, "link latency {} s: expected a finite value >= 0", link.latency_s);
  }
  if (!std::isfinite(link.bytes_per_s) || link.bytes_per_s <= 0) {
    return makeStatus(StatusCode::kInvalidArgument, "link rate {} bytes/s: expected a finite value > 0",
                      link.bytes_per_s);
  }
  const double fan_in = std::max(1.0, static_cast<double>(cluster.workers) / static_cast<double>(cluster.servers));
  const double shared = duplex == Duplex::kHalf ? 2.0 : 1.0;
  return MessageCost{2 * link.latency_s, 2 * fan_in * shared / link.bytes_per_s};
}

}  // namespace poseidon::trainer
