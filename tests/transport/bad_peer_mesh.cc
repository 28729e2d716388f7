#include "tests/transport/bad_peer_mesh.h"

#include <gtest/gtest.h>

#include <thread>

#include "transport/bootstrap/file_store.h"
#include "transport/common/handshake_steps.h"
#include "transport/common/socket.h"
#include "transport/tcp/handshake.h"

namespace poseidon::transport::badpeer {

Result<FakePeerConnection> handshakeAsRank2(const std::string& store_dir, int rank, uint16_t features, uint32_t stream,
                                            uint32_t streams) {
  auto store = bootstrap::FileStore::open(store_dir);
  if (!store) return store.status();
  auto address = (*store)->get(fmt::format("poseidon/transport/{}/address/{}", kBadPeerContext, rank),
                               Deadline::after(std::chrono::seconds(10)));
  if (!address) return address.status();
  auto host_port = splitHostPort(std::string(address->begin(), address->end()));
  if (!host_port) return host_port.status();
  auto fd = connectWithRetry(host_port->first, host_port->second, Deadline::after(std::chrono::seconds(5)));
  if (!fd) return fd.status();
  const wire::ClientHello hello =
      newClientHello(wire::contextId(kBadPeerContext), 2, static_cast<uint32_t>(rank), stream, streams, features);
  auto keys = tcp::clientHandshake(fd->get(), kBadPeerSecret, hello, Deadline::after(std::chrono::seconds(5)), "test");
  if (!keys) return keys.status();
  return FakePeerConnection{std::move(*fd), *keys};
}

BadPeerMesh makeBadPeerMesh(DeviceOptions options, uint16_t features) {
  BadPeerMesh out;
  options.secret = kBadPeerSecret;
  out.mesh.dir = std::make_unique<poseidon::testing::TempDir>();
  Status fake_status;
  std::thread fake([&] {
    // Rank 2 connects to both lower ranks once they published their addresses.
    const auto streams = static_cast<uint32_t>(options.streams);
    auto a = handshakeAsRank2(out.mesh.dir->path(), 0, features, 0, streams);
    auto b = handshakeAsRank2(out.mesh.dir->path(), 1, features, 0, streams);
    if (!a || !b) {
      fake_status = a ? b.status() : a.status();
      return;
    }
    out.to_rank0 = std::move(a->fd);
    out.keys0 = a->keys;
    out.to_rank1 = std::move(b->fd);
    out.keys1 = b->keys;
    for (uint32_t stream = 1; stream < streams; ++stream) {
      for (int rank : {0, 1}) {
        auto more = handshakeAsRank2(out.mesh.dir->path(), rank, features, stream, streams);
        if (!more) {
          fake_status = more.status();
          return;
        }
        (rank == 0 ? out.more_to_rank0 : out.more_to_rank1).push_back(std::move(more->fd));
      }
    }
  });
  // Only ranks 0 and 1 run here (size 3).
  poseidon::testing::Mesh& m = out.mesh;
  m.devices.resize(3);
  m.contexts.resize(3);
  std::vector<Status> statuses(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto device = createDevice(options);
      if (!device) {
        statuses[r] = device.status();
        return;
      }
      m.devices[r] = *device;
      auto context = (*device)->createContext(r, 3, kBadPeerContext);
      if (!context) {
        statuses[r] = context.status();
        return;
      }
      m.contexts[r] = *context;
      auto store = bootstrap::FileStore::open(m.dir->path());
      statuses[r] = store ? (*context)->connect(**store, Deadline::after(std::chrono::seconds(10))) : store.status();
    });
  }
  for (auto& t : ranks) t.join();
  fake.join();
  if (!fake_status.isOk()) throw StatusError(fake_status);
  for (auto& st : statuses) {
    if (!st.isOk()) throw StatusError(st);
  }
  return out;
}

void sendRaw(int fd, const std::vector<uint8_t>& bytes) {
  ASSERT_TRUE(sendAll(fd, bytes.data(), bytes.size(), Deadline::after(std::chrono::seconds(5)), "rank 0").isOk());
}

}  // namespace poseidon::transport::badpeer
