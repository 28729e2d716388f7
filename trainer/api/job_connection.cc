#include "trainer/api/job_connection.h"

#include <fmt/format.h>

#include "trainer/api/job_exit.h"
#include "transport/bootstrap/open_store.h"

namespace poseidon::trainer {

Result<std::unique_ptr<JobConnection>> JobConnection::open(const std::string& job, const JobLayout& layout,
                                                           const transport::bootstrap::LaunchInfo& launch,
                                                           const transport::DeviceOptions& device, Deadline deadline) {
  POSEIDON_RETURN_IF_ERROR(layout.validate());
  if (launch.size != layout.size()) {
    return makeStatus(StatusCode::kInvalidArgument, "the job has {} ranks ({} launch), but its layout needs {} ({})",
                      launch.size, launch.source, layout.size(), layout.describe());
  }
  std::unique_ptr<JobConnection> self(new JobConnection());
  self->job_ = job;
  self->layout_ = layout;
  self->launch_ = launch;
  const std::string who = layout.describe(launch.rank);
  auto store = transport::bootstrap::openStore(launch, deadline, device.secret);
  if (!store) return store.status().withContext(fmt::format("{}: the store", who));
  self->store_ = std::move(*store);
  self->view_ = std::make_unique<transport::bootstrap::StoreView>(*self->store_, job);
  auto created = transport::createDevice(device);
  if (!created) {
    return created.status().withContext(fmt::format("{}: the {} device on {}", who, device.backend, device.address));
  }
  self->device_ = *created;
  return self;
}

Result<transport::Context*> JobConnection::join(scheme::Scheme scheme, Deadline deadline) {
  const int rank = launch_.rank;
  int context_rank = rank;
  int size = layout_.workers;
  switch (scheme) {
    case scheme::Scheme::kPs: size = layout_.workers + layout_.ps_servers; break;
    case scheme::Scheme::kAdam:
      size = layout_.workers + layout_.adam_servers;
      if (layout_.roleOf(rank) == JobRole::kAdamServer) context_rank = rank - layout_.ps_servers;
      break;
    case scheme::Scheme::kSfb:
    case scheme::Scheme::kRing: break;
  }
  return connectContext(scheme::schemeName(scheme), context_rank, size, deadline);
}

Result<transport::Context*> JobConnection::joinWorkers(std::string_view purpose, Deadline deadline) {
  return connectContext(fmt::format("workers/{}", purpose), launch_.rank, layout_.workers, deadline);
}

Result<transport::Context*> JobConnection::connectContext(std::string_view name_in_job, int context_rank, int size,
                                                          Deadline deadline) {
  const std::string name = view_->key(fmt::format("context/{}", name_in_job));
  auto context = device_->createContext(context_rank, size, name);
  if (!context) return context.status().withContext(describe());
  POSEIDON_RETURN_IF_ERROR((*context)->connect(*store_, deadline).withContext(describe()));
  contexts_.push_back(*context);
  return contexts_.back().get();
}

Status JobConnection::leave(Deadline deadline, std::span<const int> lost_ranks) {
  transport::bootstrap::StoreView exit = view_->child("exit");
  return leaveJob(exit, rank(), layout_.size(), lost_ranks, deadline);
}

}  // namespace poseidon::trainer
