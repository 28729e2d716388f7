#include "trainer/reference/network_session.h"

namespace poseidon::trainer::reference {

Status registerNetwork(trainer::Session& session, Network& network) {
  for (size_t l = 0; l < network.parametricCount(); ++l) {
    const std::optional<model::Layer> described = network.parametric(l).describe();
    if (!described) return makeStatus(StatusCode::kInternal, "parametric layer {} has no description", l);
    trainer::LayerRegistration layer;
    layer.name = described->name();
    layer.kind = described->kind();
    layer.fc = described->fc();
    layer.conv = described->conv();
    layer.params = network.params(l);
    if (described->isFullyConnected()) {
      POSEIDON_RETURN_IF_ERROR(network.setFactorsOnly(l, true));
      auto factors = network.factors(l);
      if (!factors) return factors.status();
      layer.input = factors->input;
      layer.output_gradient = factors->output_gradient;
    } else {
      layer.gradient = network.grads(l);
    }
    auto added = session.addLayer(layer);
    if (!added) return added.status();
  }
  return Status::ok();
}

NetworkHooks sessionHooks(trainer::Session& session, std::function<void(HookPhase, size_t layer)> observe) {
  NetworkHooks hooks;
  hooks.before_forward = [&session, observe](size_t l) {
    if (observe) observe(HookPhase::kWaitBegin, l);
    Status status = session.waitForParameters(l);
    if (observe) observe(HookPhase::kWaitEnd, l);
    return status;
  };
  hooks.gradient_ready = [&session, observe](size_t l) {
    if (observe) observe(HookPhase::kReady, l);
    return session.gradientReady(l);
  };
  return hooks;
}

}  // namespace poseidon::trainer::reference
