#include "trainer/sync/hybrid_ps.h"

#include <utility>

namespace poseidon::trainer {

model::Model hybridPsModel(std::span<const model::Layer> layers) {
  std::vector<model::Layer> ps_layers;
  for (const model::Layer& layer : layers) {
    ps_layers.push_back(model::Layer::other(layer.name(), layer.params()));  // an FC layer's bias too
  }
  return model::Model("hybcomm-ps", std::move(ps_layers));
}

Result<ps::ChunkLayout> hybridLayout(const model::Model& ps_model, int servers, uint64_t chunk_bytes) {
  return ps::ChunkLayout::build(ps_model.tensors(), servers, chunk_bytes, ps_model.layerStarts());
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
                                                         std::span<const model::Layer> layers, int workers, int servers,
                                                         uint64_t chunk_bytes, const std::string& name,
                                                         Deadline deadline) {
  ps::ServerOptions options;
  options.optimizer.sum_only = true;
  options.average = false;  // the workers scale by 1/P1 in their own step
  return startLayerServer(context, store, layers, workers, servers, chunk_bytes, name, options, deadline);
}

Result<std::unique_ptr<ps::Server>> startLayerServer(transport::Context& context, transport::bootstrap::Store& store,
                                                     std::span<const model::Layer> layers, int workers, int servers,
                                                     uint64_t chunk_bytes, const std::string& name,
                                                     const ps::ServerOptions& options, Deadline deadline) {
  const model::Model ps_model = hybridPsModel(layers);
  auto layout = hybridLayout(ps_model, servers, chunk_bytes);
  if (!layout) return layout.status();
  return ps::Server::start(context, store, ps_model, *layout, hybridPsJob(workers, servers, name), options, deadline);
}

}  // namespace poseidon::trainer
