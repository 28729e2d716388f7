#include "tools/ps/job_process.h"

#include <fmt/format.h>

#include <cstdlib>

#include "tools/perf/rendezvous.h"
#include "transport/bootstrap/open_store.h"
#include "transport/bootstrap/store_view.h"

namespace poseidon::tools {

namespace bootstrap = transport::bootstrap;

namespace {

// "ranks 0..3" / "rank 4"
std::string rankRange(int first, int count) {
  return count == 1 ? fmt::format("rank {}", first) : fmt::format("ranks {}..{}", first, first + count - 1);
}

std::string layoutText(const ps::PsJob& job) {
  return fmt::format("workers on {}, servers on {}", rankRange(0, job.workers), rankRange(job.workers, job.servers));
}

// Where the rank and size came from, for messages.
std::string origin(const bootstrap::LaunchInfo& launch, const JobOptions& options) {
  return options.rank >= 0 ? "--rank/--size" : fmt::format("the {} launch environment", launch.source);
}

// The local address to listen on: --address, else the one on the route to rank 0's store.
Result<std::string> listenAddress(const JobOptions& options, const bootstrap::LaunchInfo& launch) {
  if (!options.address.empty()) return options.address;
  return addressTowardsStore(launch);
}

}  // namespace

Result<std::string> addressTowardsStore(const bootstrap::LaunchInfo& launch) {
  if (launch.size == 1 || launch.file_store_dir) return std::string(transport::DeviceOptions{}.address);
  auto root = perf::numericAddress(launch.root_host);
  if (!root) return root.status().withContext("the store's host (give --address)");
  auto source = perf::routeSourceAddress(*root);
  if (!source) return source.status().withContext("choosing the local address (give --address)");
  return *source;
}

std::string JobProcess::describe() const {
  if (job.isServerRank(launch.rank)) {
    return fmt::format("server {} (rank {} of {})", launch.rank - job.workers, launch.rank, launch.size);
  }
  return fmt::format("worker {} (rank {} of {})", launch.rank, launch.rank, launch.size);
}

Result<bootstrap::LaunchInfo> resolveLaunch(const JobOptions& options) {
  // The overrides are read as the plain launcher's variables, so they win over mpirun's and
  // srun's and are checked by the same code.
  const auto lookup = [&options](const std::string& name) -> std::optional<std::string> {
    if (name == "POSEIDON_RANK" && options.rank >= 0) return std::to_string(options.rank);
    if (name == "POSEIDON_SIZE" && options.size >= 0) return std::to_string(options.size);
    if (name == "POSEIDON_ROOT" && !options.root.empty()) return options.root;
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
  auto launch = bootstrap::detectLaunch(lookup);
  if (!launch) {
    return launch.status().withContext(
        "who this process is (give --rank, --size and --root, or start it with "
        "mpirun or srun)");
  }
  return launch;
}

Status checkRole(const bootstrap::LaunchInfo& launch, const ps::PsJob& job, Role role, const char* other_program) {
  if (job.workers + job.servers != launch.size) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "--workers {} + --servers {} = {} ranks, but the job has size {} ({} launch): expected them to "
                      "add up",
                      job.workers, job.servers, job.workers + job.servers, launch.size, launch.source);
  }
  const bool server = job.isServerRank(launch.rank);
  if (server == (role == Role::kServer)) return Status::ok();
  return makeStatus(StatusCode::kInvalidArgument, "rank {} is a {} rank of this job ({}): run {} there", launch.rank,
                    server ? "server" : "worker", layoutText(job), other_program);
}

Result<std::unique_ptr<JobProcess>> joinJob(const JobOptions& options, Role role, const char* other_program) {
  auto process = std::make_unique<JobProcess>();
  process->timeout = std::chrono::seconds(options.timeout_s);
  auto launch = resolveLaunch(options);
  if (!launch) return launch.status();
  process->launch = *launch;
  const int workers = options.workers > 0 ? options.workers : launch->size - options.servers;
  if (workers < 1) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "the job has size {} ({}) and --servers {}: that leaves no worker rank", launch->size,
                      origin(*launch, options), options.servers);
  }
  process->job = ps::PsJob{workers, options.servers, options.job_name};
  POSEIDON_RETURN_IF_ERROR(checkRole(*launch, process->job, role, other_program));
  auto layout = ps::ChunkLayout::build(options.model.tensors(), options.servers, options.chunk_bytes);
  if (!layout) return layout.status().withContext(fmt::format("--model '{}'", options.model_spec));
  process->layout = std::move(*layout);
  auto address = listenAddress(options, *launch);
  if (!address) return address.status();
  process->address = *address;

  const std::string who = process->describe();
  auto store = bootstrap::openStore(*launch, process->deadline(), options.secret);
  if (!store) return store.status().withContext(fmt::format("{}: the store", who));
  process->store = std::move(*store);
  transport::DeviceOptions device_options;
  device_options.backend = options.backend;
  device_options.address = process->address;
  device_options.secret = options.secret;
  device_options.streams = options.streams;
  device_options.waiters_drive = options.progress != "engine";
  auto device = transport::createDevice(device_options);
  if (!device) {
    return device.status().withContext(fmt::format("{}: the {} device on {}", who, options.backend, process->address));
  }
  process->device = *device;
  auto context = process->device->createContext(launch->rank, launch->size, options.job_name);
  if (!context) return context.status().withContext(who);
  process->context = *context;
  POSEIDON_RETURN_IF_ERROR(process->context->connect(*process->store, process->deadline()).withContext(who));
  return process;
}

Status leave(JobProcess& process) {
  // "<job>/tools-exit/{count,done}" for the barrier, then "<job>/tools-exit/gone/<rank>".
  bootstrap::StoreView job(*process.store, process.job.name);
  POSEIDON_RETURN_IF_ERROR(bootstrap::barrier(job, "tools-exit", process.launch.size, process.deadline()));
  bootstrap::StoreView gone = job.child("tools-exit").child("gone");
  // A rank's last call is a set() the store has answered, so after rank 0 has seen them all,
  // nobody talks to its store any more.
  if (process.rank() != 0) return bootstrap::setString(gone, std::to_string(process.rank()), "1");
  for (int rank = 1; rank < process.launch.size; ++rank) {
    POSEIDON_RETURN_IF_ERROR(bootstrap::getString(gone, std::to_string(rank), process.deadline()).status());
  }
  return Status::ok();
}

}  // namespace poseidon::tools
