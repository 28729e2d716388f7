#include "tools/train/backward_profiler.h"

#include <fmt/format.h>

#include "trainer/wfbp/backward_profile.h"

namespace poseidon::tools {

Result<std::vector<double>> profileBackwardPasses(trainer::reference::Network& network, BatchReader& reader,
                                                  int passes) {
  if (passes < 2) return makeStatus(StatusCode::kInvalidArgument, "{} profiling passes: expected at least 2", passes);
  const size_t layers = network.parametricCount();
  std::vector<trainer::BackwardIteration> iterations;
  trainer::BackwardIteration current;
  trainer::reference::NetworkHooks hooks;
  hooks.gradient_ready = [&](size_t layer) -> Status {
    // Reported from the output down: position layers - 1 - layer.
    current.reported[layers - 1 - layer] = Clock::now();
    return Status::ok();
  };
  network.setHooks(hooks);
  trainer::data::Position position;
  Status status;
  for (int pass = 0; pass < passes && status.isOk(); ++pass) {
    status = reader.read(position);
    if (!status.isOk()) break;
    auto loss = network.forward(reader.images(), reader.labels());
    if (!loss) {
      status = loss.status();
      break;
    }
    current = {};
    current.reported.assign(layers, std::nullopt);
    current.backward_start = Clock::now();
    status = network.backward();
    if (status.isOk() && pass > 0) iterations.push_back(current);
    position = reader.sharder().next(position);
  }
  network.setHooks({});
  if (!status.isOk()) return status.withContext("profiling the backward pass");
  auto profile = trainer::profileBackward(iterations, layers);
  if (!profile) return profile.status().withContext("profiling the backward pass");
  return profile->backward_s;
}

}  // namespace poseidon::tools
