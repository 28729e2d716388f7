// One rank of a parameter-server job in its own process, for the multi-process PS tests.
//
//   ps_peer (--store DIR | --root HOST:PORT) --rank R --size N --workers P1 --role worker|server [options]
//
// Workers run the synthetic training of synthetic_training.h up to --clocks and write their final
// parameters (raw float32) to --output; --trace writes one line per push and pull with the clock,
// the lowest version pulled and CLOCK_MONOTONIC nanoseconds, so a test can check SSP's bound
// across processes; --die-at-clock makes the worker SIGKILL itself there. Servers run ps::Server
// with the checkpoint options until every worker is done.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <fstream>
#include <thread>

#include "ps/server.h"
#include "tests/ps/synthetic_training.h"
#include "transport/bootstrap/open_store.h"
#include "transport/common/socket.h"
#include "transport/device.h"

using namespace poseidon;

namespace {

int fail(const Status& status, const std::string& what) {
  spdlog::error("ps_peer: {}: {}", what, status.toString());
  return 1;
}

struct PeerOptions {
  int workers = 2;
  uint64_t clocks = 20;
  int64_t die_at_clock = -1;
  int clock_delay_ms = 0;
  std::string output, trace;
};

uint64_t monotonicNanos() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// trainWorker, with a trace and the optional death and delay the tests ask for.
Status runWorker(ps::Client& client, int worker, const PeerOptions& options, Deadline deadline) {
  std::ofstream trace;
  if (!options.trace.empty()) trace.open(options.trace);
  std::span<float> params = client.allParameters();
  std::span<float> grads(client.gradients(0).data(), params.size());
  if (client.startClock() == 0) testing::initialParameters(params);
  POSEIDON_RETURN_IF_ERROR(client.initialize(deadline));
  std::vector<transport::RequestPtr> requests;
  auto pullAll = [&](uint64_t clock) -> Status {
    requests.clear();
    for (size_t l = 0; l < client.layerCount(); ++l) requests.push_back(client.pull(l));
    for (const auto& request : requests) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    uint64_t lowest = UINT64_MAX;
    for (size_t l = 0; l < client.layerCount(); ++l) lowest = std::min(lowest, client.version(l));
    if (trace) trace << "pull " << clock << ' ' << lowest << ' ' << monotonicNanos() << '\n' << std::flush;
    return Status::ok();
  };
  spdlog::info("ps_peer: worker {} starts at clock {}", worker, client.startClock());
  POSEIDON_RETURN_IF_ERROR(pullAll(client.startClock()));
  for (uint64_t clock = client.startClock(); clock < options.clocks; ++clock) {
    if (static_cast<int64_t>(clock) == options.die_at_clock) raise(SIGKILL);
    if (options.clock_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options.clock_delay_ms));
    testing::syntheticGradient(worker, clock, params, grads);
    if (trace) trace << "push " << clock << " 0 " << monotonicNanos() << '\n' << std::flush;
    std::vector<transport::RequestPtr> pushes;
    for (size_t l = 0; l < client.layerCount(); ++l) pushes.push_back(client.push(l));
    for (const auto& request : pushes) POSEIDON_RETURN_IF_ERROR(client.wait(request, deadline));
    POSEIDON_RETURN_IF_ERROR(pullAll(clock + 1));
  }
  if (!options.output.empty()) {
    std::ofstream out(options.output, std::ios::binary);
    out.write(reinterpret_cast<const char*>(params.data()), static_cast<std::streamsize>(params.size_bytes()));
    if (!out) return errnoStatus(StatusCode::kIoError, "write " + options.output);
  }
  return client.finish(deadline);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Poseidon parameter-server test peer"};
  std::string root, store_dir, role, address = "127.0.0.1", consistency_text = "bsp",
                                     optimizer_text = "sgd:lr=0.05,momentum=0.9";
  std::string checkpoint_dir;
  int rank = 0, size = 2, timeout_s = 60;
  uint64_t chunk_bytes = 4096, checkpoint_every = 0;
  int checkpoint_keep = ps::ServerOptions{}.checkpoint_keep;
  bool resume = false;
  PeerOptions options;
  auto* store_option = app.add_option("--store", store_dir, "FileStore directory shared by all ranks");
  app.add_option("--root", root, "host:port of the TCP store rank 0 serves")->excludes(store_option);
  app.add_option("--rank", rank)->required();
  app.add_option("--size", size)->required();
  app.add_option("--workers", options.workers)->required();
  app.add_option("--role", role)->required()->check(CLI::IsMember({"worker", "server"}));
  std::string backend = "tcp";
  app.add_option("--address", address);
  app.add_option("--backend", backend)->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_option("--consistency", consistency_text);
  app.add_option("--optimizer", optimizer_text);
  app.add_option("--chunk-bytes", chunk_bytes);
  uint64_t extra_floats = 0;
  app.add_option("--extra-floats", extra_floats, "floats added to the last tensor (a rank built differently)");
  app.add_option("--clocks", options.clocks);
  app.add_option("--die-at-clock", options.die_at_clock);
  app.add_option("--clock-delay-ms", options.clock_delay_ms);
  app.add_option("--output", options.output);
  app.add_option("--trace", options.trace);
  app.add_option("--checkpoint-dir", checkpoint_dir);
  app.add_option("--checkpoint-every", checkpoint_every);
  app.add_option("--checkpoint-keep", checkpoint_keep);
  app.add_flag("--resume", resume);
  app.add_option("--timeout", timeout_s);
  CLI11_PARSE(app, argc, argv);

  const Deadline deadline = Deadline::after(std::chrono::seconds(timeout_s));
  auto consistency = ps::parseConsistency(consistency_text);
  if (!consistency) return fail(consistency.status(), "--consistency");
  if (!root.empty() && consistency->mode == ps::Consistency::Mode::kAsync) {
    // Rank 0's store leaves with it, and there is no exit barrier (see the end of main): under
    // async, rank 0 may finish while a slower rank still reads its servers' regions from the store.
    return fail(makeStatus(StatusCode::kInvalidArgument,
                           "--root with --consistency {}: a TCP store needs BSP or SSP here; use --store",
                           consistency->canonical()),
                "--root");
  }
  auto optimizer = kernels::parseOptimizer(optimizer_text);
  if (!optimizer) return fail(optimizer.status(), "--optimizer");
  transport::bootstrap::LaunchInfo launch;
  launch.rank = rank;
  launch.size = size;
  if (!store_dir.empty()) {
    launch.file_store_dir = store_dir;
  } else {
    auto host_port = transport::splitHostPort(root);
    if (!host_port) return fail(host_port.status(), "--root");
    launch.root_host = host_port->first;
    launch.root_port = host_port->second;
  }
  auto store = transport::bootstrap::openStore(launch, deadline, "ps-peer-secret");
  if (!store) return fail(store.status(), "store");
  transport::DeviceOptions device_options;
  device_options.backend = backend;
  device_options.address = address;
  device_options.secret = "ps-peer-secret";
  auto device = transport::createDevice(device_options);
  if (!device) return fail(device.status(), "device");
  auto context = (*device)->createContext(rank, size, "ps");
  if (!context) return fail(context.status(), "context");
  if (Status st = (*context)->connect(**store, deadline); !st.isOk()) return fail(st, "connect");

  const ps::PsJob job{options.workers, size - options.workers, "ps"};
  const auto model = testing::syntheticModel(extra_floats);
  auto layout = ps::ChunkLayout::build(model.tensors(), job.servers, chunk_bytes);
  if (!layout) return fail(layout.status(), "layout");
  Status status;
  if (role == "server") {
    ps::ServerOptions server_options;
    server_options.optimizer = *optimizer;
    server_options.consistency = *consistency;
    server_options.checkpoint_dir = checkpoint_dir;
    server_options.checkpoint_every = checkpoint_every;
    server_options.checkpoint_keep = checkpoint_keep;
    server_options.resume = resume;
    auto server = ps::Server::start(**context, **store, model, *layout, job, server_options, deadline);
    if (!server) return fail(server.status(), "server");
    status = (*server)->waitUntilDone(deadline);
  } else {
    auto client = ps::Client::start(**context, **store, model, *layout, job, *consistency, deadline);
    if (!client) return fail(client.status(), "client");
    status = runWorker(**client, rank, options, deadline);
  }
  // No exit barrier: under BSP and SSP every rank is past the store once training ran (start()
  // does all the exchanges; async with --root is refused above), and a barrier would wait for a
  // peer a test killed.
  if (!status.isOk()) return fail(status, role);
  return 0;
}
