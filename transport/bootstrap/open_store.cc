#include "transport/bootstrap/open_store.h"

#include "transport/bootstrap/file_store.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/common/socket.h"

namespace poseidon::transport::bootstrap {

namespace {

// Rank 0's store: its own client, plus the server that has to live as long as the client.
class ServedTcpStore final : public Store {
 public:
  ServedTcpStore(std::unique_ptr<TcpStoreServer> server, std::unique_ptr<TcpStore> client)
      : server_(std::move(server)), client_(std::move(client)) {}

  Status set(const std::string& key, const std::vector<uint8_t>& value) override { return client_->set(key, value); }
  Result<std::vector<uint8_t>> get(const std::string& key, Deadline deadline) override {
    return client_->get(key, deadline);
  }
  Result<int64_t> add(const std::string& key, int64_t delta) override { return client_->add(key, delta); }

 private:
  // Declared first so it is destroyed last, after the client has closed its connections.
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> client_;
};

}  // namespace

Result<std::unique_ptr<Store>> openStore(const LaunchInfo& info, Deadline deadline, const std::string& secret) {
  const std::string who = fmt::format("rank {} of {} ({} launch)", info.rank, info.size, info.source);
  if (info.file_store_dir) {
    Result<std::unique_ptr<FileStore>> store = FileStore::open(*info.file_store_dir);
    if (!store) return store.status().withContext(who);
    return std::unique_ptr<Store>(std::move(*store));
  }

  const std::string root = formatHostPort(info.root_host, info.root_port);
  uint16_t port = info.root_port;
  std::unique_ptr<TcpStoreServer> server;
  if (info.rank == 0) {
    // Alone, nobody needs to find the store: an ephemeral port cannot clash with another job.
    const uint16_t listen_port = info.size == 1 ? 0 : info.root_port;
    TcpStoreServerOptions options;
    options.secret = secret;
    Result<std::unique_ptr<TcpStoreServer>> started = TcpStoreServer::start(info.root_host, listen_port, options);
    if (!started) return started.status().withContext(fmt::format("{}: serving the store on {}", who, root));
    server = std::move(*started);
    port = server->port();
  }
  TcpStoreOptions client_options;
  client_options.secret = secret;
  Result<std::unique_ptr<TcpStore>> client = TcpStore::connect(info.root_host, port, deadline, client_options);
  if (!client) return client.status().withContext(who);
  if (server) return std::unique_ptr<Store>(new ServedTcpStore(std::move(server), std::move(*client)));
  return std::unique_ptr<Store>(std::move(*client));
}

}  // namespace poseidon::transport::bootstrap
