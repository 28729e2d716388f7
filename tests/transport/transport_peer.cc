// A rank in its own process, for the multi-process and multi-host transport tests.
//
//   transport_peer (--store DIR | --root HOST:PORT) --rank R --size N --role ROLE
//                  [--backend tcp|verbs] [--address A] [--streams S]
//
// --store rendezvouses through a directory all ranks share; --root through a TCP store that
// rank 0 serves at HOST:PORT (hosts without a shared filesystem: the Soft-RoCE guests).
//
// Roles:
//   exchange  ranks 0 and 1 swap messages of many sizes and one-sided writes both ways and
//             check every byte; exit 0 when all arrived intact.
//   flood     send 8 MiB messages to rank 0 on tag 1 until killed.
//   echo      receive messages from rank 0 on tag 0 and send each back, until an empty one.
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstring>
#include <vector>

#include "tests/support/mesh.h"
#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/open_store.h"
#include "transport/common/socket.h"
#include "transport/device.h"

using namespace poseidon;
using namespace poseidon::transport;
using poseidon::testing::firstMismatch;
using poseidon::testing::makeBuffer;

namespace {

constexpr auto kTimeout = std::chrono::seconds(60);

int fail(const Status& st, const std::string& what) {
  spdlog::error("transport_peer: {}: {}", what, st.toString());
  return 1;
}

int exchange(Context& ctx) {
  const int peer = 1 - ctx.rank();
  Pair& pair = ctx.pair(peer);
  const std::vector<size_t> sizes = {0, 1, 4095, 65536, (1 << 20) + 3, 64u << 20};
  for (size_t size : sizes) {
    auto out = makeBuffer(ctx, size, static_cast<uint8_t>(ctx.rank() * 16 + size % 251));
    auto in = makeBuffer(ctx, size, 0);
    auto r = pair.recv(0, *in.region, 0, size);
    auto s = pair.send(0, *out.region, 0, size);
    if (Status st = s->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "send");
    if (Status st = r->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "recv");
    const auto expected_seed = static_cast<uint8_t>(peer * 16 + size % 251);
    if (r->bytes() != size || firstMismatch(in.bytes.data(), size, expected_seed) != -1) {
      spdlog::error("transport_peer: message of {} bytes from rank {} arrived damaged", size, peer);
      return 1;
    }
  }
  // One-sided: each rank exposes a region, learns the peer's descriptor by message, writes.
  constexpr size_t kRegion = 16 << 20;
  auto target = makeBuffer(ctx, kRegion, 0);
  auto source = makeBuffer(ctx, kRegion, static_cast<uint8_t>(100 + ctx.rank()));
  auto mine = target.region->remote().serialize();
  auto desc_out = makeBuffer(ctx, mine.size());
  std::memcpy(desc_out.bytes.data(), mine.data(), mine.size());
  auto desc_in = makeBuffer(ctx, mine.size());
  auto r = pair.recv(7, *desc_in.region, 0, mine.size());
  auto s = pair.send(7, *desc_out.region, 0, mine.size());
  if (Status st = r->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "descriptor");
  // `desc_out` must outlive its send.
  if (Status st = s->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "descriptor send");
  auto remote = RemoteDescriptor::parse(desc_in.bytes);
  if (!remote) return fail(remote.status(), "descriptor");
  auto note = pair.recvImm();
  auto w = pair.write(*source.region, 0, *remote, 0, kRegion, 0xC0FFEE);
  if (Status st = w->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "write");
  if (Status st = note->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "write notification");
  if (note->imm() != 0xC0FFEE || firstMismatch(target.bytes.data(), kRegion, static_cast<uint8_t>(100 + peer)) != -1) {
    spdlog::error("transport_peer: write from rank {} arrived damaged (imm {:x})", peer, note->imm());
    return 1;
  }
  // Do not close before the peer has everything: a last message pair as a barrier.
  auto bye_in = makeBuffer(ctx, 1);
  auto bye_out = makeBuffer(ctx, 1);
  auto br = pair.recv(9, *bye_in.region, 0, 1);
  auto bs = pair.send(9, *bye_out.region, 0, 1);
  if (Status st = br->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "final barrier");
  if (Status st = bs->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "final barrier");
  return 0;
}

int flood(Context& ctx) {
  auto out = makeBuffer(ctx, 8 << 20, 1);
  while (true) {
    auto s = ctx.pair(0).send(1, *out.region, 0, out.bytes.size());
    if (Status st = s->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "flood");
  }
}

int echo(Context& ctx) {
  auto buffer = makeBuffer(ctx, 1 << 20, 0);
  while (true) {
    auto r = ctx.pair(0).recv(0, *buffer.region, 0, buffer.bytes.size());
    if (Status st = r->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "echo recv");
    if (r->bytes() == 0) return 0;
    auto s = ctx.pair(0).send(0, *buffer.region, 0, r->bytes());
    if (Status st = s->wait(Deadline::after(kTimeout)); !st.isOk()) return fail(st, "echo send");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Poseidon transport test peer"};
  std::string store_dir, role, address = "127.0.0.1", secret = "peer-secret", name = "peer", backend = "tcp";
  int rank = 0, size = 2, streams = 1;
  std::string root;
  auto* store_option = app.add_option("--store", store_dir, "FileStore directory shared by all ranks");
  app.add_option("--root", root, "host:port of the TCP store rank 0 serves")->excludes(store_option);
  app.add_option("--rank", rank)->required();
  app.add_option("--size", size)->required();
  app.add_option("--role", role)->required()->check(CLI::IsMember({"exchange", "flood", "echo", "idle"}));
  app.add_option("--address", address);
  app.add_option("--backend", backend)->check(CLI::IsMember({"tcp", "verbs"}));
  app.add_option("--streams", streams);
  app.add_option("--secret", secret);
  app.add_option("--context", name);
  CLI11_PARSE(app, argc, argv);

  DeviceOptions options;
  options.backend = backend;
  options.address = address;
  options.streams = streams;
  options.secret = secret;
  auto device = createDevice(options);
  if (!device) return fail(device.status(), "device");
  auto context = (*device)->createContext(rank, size, name);
  if (!context) return fail(context.status(), "context");
  Result<std::unique_ptr<bootstrap::Store>> store = makeStatus(StatusCode::kInvalidArgument, "give --store or --root");
  if (!store_dir.empty()) {
    auto file_store = bootstrap::FileStore::open(store_dir);
    store = file_store ? Result<std::unique_ptr<bootstrap::Store>>(std::move(*file_store))
                       : Result<std::unique_ptr<bootstrap::Store>>(file_store.status());
  } else if (!root.empty()) {
    auto host_port = splitHostPort(root);
    if (!host_port) return fail(host_port.status(), "--root");
    bootstrap::LaunchInfo launch;
    launch.rank = rank;
    launch.size = size;
    launch.root_host = host_port->first;
    launch.root_port = host_port->second;
    store = bootstrap::openStore(launch, Deadline::after(kTimeout), secret);
  }
  if (!store) return fail(store.status(), "store");
  if (Status st = (*context)->connect(**store, Deadline::after(kTimeout)); !st.isOk()) return fail(st, "connect");
  if (role == "exchange") return exchange(**context);
  if (role == "flood") return flood(**context);
  if (role == "echo") return echo(**context);
  return 0;
}
