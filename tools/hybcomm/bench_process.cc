#include "tools/hybcomm/bench_process.h"

#include <fmt/format.h>

#include "tools/perf/rendezvous.h"
#include "transport/bootstrap/open_store.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::tools {

namespace {

// --address, else this host's address on the route to rank 0's store (which the others reach).
Result<std::string> listenAddress(const JobOptions& options, const transport::bootstrap::LaunchInfo& launch) {
  if (!options.address.empty()) return options.address;
  if (launch.size == 1 || launch.file_store_dir) return std::string(transport::DeviceOptions{}.address);
  auto root = perf::numericAddress(launch.root_host);
  if (!root) return root.status().withContext("the store's host (give --address)");
  return perf::routeSourceAddress(*root);
}

Status checkPlace(const HybBenchCommandLine& c, const transport::bootstrap::LaunchInfo& launch) {
  if (launch.size != c.jobSize()) {
    return makeStatus(StatusCode::kInvalidArgument, "the job has size {} ({} launch), but this job has {} ranks ({})",
                      launch.size, launch.source, c.jobSize(), c.rankLayout());
  }
  const BenchRole role = c.roleOfRank(launch.rank);
  if (!c.role.empty() && c.role != roleName(role)) {
    return makeStatus(StatusCode::kInvalidArgument, "--role {}: rank {} is a {} rank of this job ({})", c.role,
                      launch.rank, roleName(role), c.rankLayout());
  }
  return Status::ok();
}

}  // namespace

std::string HybridProcess::describe() const {
  const int rank = base.launch.rank;
  const int size = base.launch.size;
  const int workers = base.job.workers;
  const int ps_servers = base.job.servers;
  switch (role) {
    case BenchRole::kWorker: return fmt::format("worker {} (rank {} of {})", rank, rank, size);
    case BenchRole::kPsServer: return fmt::format("PS server {} (rank {} of {})", rank - workers, rank, size);
    case BenchRole::kAdamServer:
      return fmt::format("Adam server {} (rank {} of {})", rank - workers - ps_servers, rank, size);
  }
  return "?";
}

Result<std::unique_ptr<HybridProcess>> joinHybridJob(const HybBenchCommandLine& c) {
  auto process = std::make_unique<HybridProcess>();
  JobProcess& base = process->base;
  base.timeout = std::chrono::seconds(c.job.timeout_s);
  auto launch = resolveLaunch(c.job);
  if (!launch) return launch.status();
  base.launch = *launch;
  POSEIDON_RETURN_IF_ERROR(checkPlace(c, *launch));
  base.job = ps::PsJob{c.workers(), c.psServers(), c.job.job_name};
  process->role = c.roleOfRank(launch->rank);
  auto address = listenAddress(c.job, *launch);
  if (!address) return address.status();
  base.address = *address;

  const std::string who = process->describe();
  auto store = transport::bootstrap::openStore(*launch, base.deadline(), c.job.secret);
  if (!store) return store.status().withContext(fmt::format("{}: the store", who));
  base.store = std::move(*store);
  transport::DeviceOptions device_options;
  device_options.backend = c.job.backend;
  device_options.address = base.address;
  device_options.secret = c.job.secret;
  device_options.streams = c.job.streams;
  auto device = transport::createDevice(device_options);
  if (!device) {
    return device.status().withContext(fmt::format("{}: the {} device on {}", who, c.job.backend, base.address));
  }
  base.device = *device;

  // One context per scheme, named "<job>/context/<scheme>": its keys live under that name.
  const transport::bootstrap::StoreView contexts =
      transport::bootstrap::StoreView(*base.store, c.job.job_name).child("context");
  const auto join = [&](const char* scheme, int rank, int size) -> Result<std::shared_ptr<transport::Context>> {
    auto context = base.device->createContext(rank, size, contexts.key(scheme));
    if (!context) return context.status().withContext(who);
    POSEIDON_RETURN_IF_ERROR((*context)->connect(*base.store, base.deadline()).withContext(who));
    return *context;
  };
  const int rank = launch->rank;
  const int workers = c.workers();
  const int ps_size = workers + c.psServers();
  const int adam_size = workers + c.adamServersInJob();
  switch (process->role) {
    case BenchRole::kWorker: {
      auto ps = join("ps", rank, ps_size);
      if (!ps) return ps.status();
      base.context = *ps;
      struct Member {
        scheme::Scheme scheme;
        const char* name;
        std::shared_ptr<transport::Context>* slot;
        int size;
      };
      const Member others[] = {{scheme::Scheme::kSfb, "sfb", &process->sfb, workers},
                               {scheme::Scheme::kRing, "ring", &process->ring, workers},
                               {scheme::Scheme::kAdam, "adam", &process->adam, adam_size}};
      for (const Member& member : others) {
        if (!c.uses(member.scheme)) continue;
        auto context = join(member.name, rank, member.size);
        if (!context) return context.status();
        *member.slot = *context;
      }
      break;
    }
    case BenchRole::kPsServer: {
      auto ps = join("ps", rank, ps_size);
      if (!ps) return ps.status();
      base.context = *ps;
      break;
    }
    case BenchRole::kAdamServer: {
      auto adam = join("adam", rank - c.psServers(), adam_size);
      if (!adam) return adam.status();
      process->adam = *adam;
      break;
    }
  }
  return process;
}

int endHybridJob(HybridProcess& process, Status status, const char* program) {
  if (status) status = leave(process.base);
  if (status) return 0;
  fmt::print(stderr, "{}: {}: {}\n", program, process.describe(), status.toString());
  return 1;
}

}  // namespace poseidon::tools
