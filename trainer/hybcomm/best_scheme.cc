#include "trainer/hybcomm/best_scheme.h"

#include <fmt/format.h>

#include <algorithm>

namespace poseidon::trainer {

namespace {

// The schemes a rule prices for a layer, in order of preference on a tie: the paper sends an FC
// layer SFB when its cost equals PS's, and PS before the opt-in alternatives.
Result<std::vector<PricedScheme>> price(const model::Layer& layer, const ClusterShape& cluster,
                                        const BestSchemeOptions& options) {
  std::vector<PricedScheme> priced;
  if (options.rule == Rule::kSacp2015) {
    if (!layer.isFullyConnected()) {
      priced.push_back(
          {scheme::Scheme::kPs, 2.0 * static_cast<double>(cluster.workers) * static_cast<double>(layer.denseFloats())});
      return priced;
    }
    auto totals = poseidon2015Totals(layer, cluster);
    if (!totals) return totals.status();
    priced.push_back({scheme::Scheme::kSfb, totals->sfb});
    priced.push_back({scheme::Scheme::kAdam, totals->adam});
    return priced;
  }
  std::vector<scheme::Scheme> schemes;
  if (layer.isFullyConnected()) schemes.push_back(scheme::Scheme::kSfb);
  schemes.push_back(scheme::Scheme::kPs);
  if (options.consider_ring) schemes.push_back(scheme::Scheme::kRing);
  if (options.consider_adam && layer.isFullyConnected()) schemes.push_back(scheme::Scheme::kAdam);
  for (scheme::Scheme scheme : schemes) {
    auto traffic = busiestNodeTraffic(scheme, layer, cluster);
    if (!traffic) return traffic.status();
    priced.push_back({scheme, traffic->floats()});
  }
  return priced;
}

// "fc6: SFB 28.02M floats < PS 385.35M floats", cheapest first; "=" marks a tie kept by preference.
std::string explain(const model::Layer& layer, const std::vector<PricedScheme>& priced, Rule rule) {
  std::string reason = fmt::format("{}: ", layer.name());
  for (size_t i = 0; i < priced.size(); ++i) {
    if (i > 0) reason += priced[i].floats == priced[i - 1].floats ? " = " : " < ";
    reason += fmt::format("{} {} floats", scheme::schemeName(priced[i].scheme), formatCount(priced[i].floats));
  }
  if (!layer.isFullyConnected()) {
    reason += fmt::format(" (not fully connected: {} parameters, no sufficient factors)",
                          formatCount(static_cast<double>(layer.params())));
  }
  if (rule == Rule::kSacp2015) reason += " ([Poseidon 2015] totals)";
  return reason;
}

}  // namespace

Result<Decision> bestScheme(const model::Layer& layer, const ClusterShape& cluster, const BestSchemeOptions& options) {
  POSEIDON_RETURN_IF_ERROR(layer.validate());
  POSEIDON_RETURN_IF_ERROR(validateCluster(cluster));
  if (options.rule == Rule::kSacp2015 && (options.consider_ring || options.consider_adam)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "ring/Adam options (ring {}, Adam {}) apply to the ATC'17 rule, not SACP, which "
                      "already weighs SFB against Adam",
                      options.consider_ring, options.consider_adam);
  }
  auto priced = price(layer, cluster, options);
  if (!priced) return priced.status();
  std::stable_sort(priced->begin(), priced->end(),
                   [](const PricedScheme& a, const PricedScheme& b) { return a.floats < b.floats; });
  Decision decision;
  decision.layer = layer.name();
  decision.scheme = priced->front().scheme;
  decision.floats = priced->front().floats;
  decision.reason = explain(layer, *priced, options.rule);
  decision.priced = std::move(*priced);
  return decision;
}

Result<std::vector<Decision>> bestSchemes(std::span<const model::Layer> layers, const ClusterShape& cluster,
                                          const BestSchemeOptions& options) {
  std::vector<Decision> decisions;
  decisions.reserve(layers.size());
  for (const model::Layer& layer : layers) {
    auto decision = bestScheme(layer, cluster, options);
    if (!decision) return decision.status();
    decisions.push_back(std::move(*decision));
  }
  return decisions;
}

}  // namespace poseidon::trainer
