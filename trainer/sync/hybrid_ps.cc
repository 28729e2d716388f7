#include "trainer/sync/hybrid_ps.h"

namespace poseidon::trainer {

std::vector<ps::TensorSpec> hybridTensors(std::span<const model::Layer> layers) {
  std::vector<ps::TensorSpec> tensors;
  for (const model::Layer& layer : layers) {
    tensors.push_back({layer.name(), layer.denseFloats()});
  }
  return tensors;
}

Result<ps::ChunkLayout> hybridLayout(std::span<const model::Layer> layers, int servers,
                                                uint64_t chunk_bytes) {
  std::vector<size_t> starts(layers.size());
  for (size_t l = 0; l < layers.size(); ++l) starts[l] = l;
  const auto tensors = hybridTensors(layers);
  return ps::ChunkLayout::build(tensors, servers, chunk_bytes, starts);
}

ps::PsJob hybridPsJob(int workers, int servers, const std::string& name) {
  ps::PsJob job;
  job.workers = workers;
  job.servers = servers;
  job.name = name + "/ps";
  return job;
}

Result<std::unique_ptr<ps::Server>> startSummationServer(transport::Context& context,
                                                                    transport::bootstrap::Store& store,
                                                                    std::span<const model::Layer> layers,
                                                                    int workers, int servers, uint64_t chunk_bytes,
                                                                    const std::string& name,
                                                                    Deadline deadline) {
  auto layout = hybridLayout(layers, servers, chunk_bytes);
  if (!layout) return layout.status();
  ps::ServerOptions options;
  options.optimizer.sum_only = true;
  options.average = false;  // the workers scale by 1/P1 in their own step
  const auto tensors = hybridTensors(layers);
  return ps::Server::start(context, store, tensors, *layout, hybridPsJob(workers, servers, name), options, deadline);
}

}  // namespace poseidon::trainer
