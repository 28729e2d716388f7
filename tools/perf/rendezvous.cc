#include "tools/perf/rendezvous.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace poseidon::perf {
namespace {

namespace bootstrap = transport::bootstrap;

constexpr const char* kClientsKey = "poseidon-perf/clients";
constexpr const char* kParamsKey = "poseidon-perf/params";
constexpr const char* kVerdictKey = "poseidon-perf/server-status";
constexpr const char* kResultsKey = "poseidon-perf/results";
constexpr const char* kConfirmKey = "poseidon-perf/server-done";
constexpr const char* kGoodbyeKey = "poseidon-perf/client-done";
constexpr const char* kOk = "ok";

std::string regionKey(int rank) { return fmt::format("poseidon-perf/region/{}", rank); }

std::string numericHost(const sockaddr* address, socklen_t length) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(address, length, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0) return {};
  return host;
}

// Creates the device, context and buffers of `session.params`.
Status createSide(Session& session, const Options& options, const std::string& address) {
  const RunParameters& p = session.params;
  transport::DeviceOptions device_options;
  device_options.backend = p.transport;
  device_options.address = address;
  device_options.port = 0;
  device_options.secret = options.secret;
  device_options.streams = p.streams;
  device_options.busy_poll = options.busy_poll || p.busy_poll;
  device_options.waiters_drive = p.waiters_drive;
  device_options.payload_crc = p.payload_crc;
  device_options.encrypt_frames = p.encrypt_frames;
  if (p.transport == "verbs") device_options.gid_index = options.gid_index;
  auto device = transport::createDevice(device_options);
  if (!device) {
    return device.status().withContext(fmt::format("creating the {} device on {}", p.transport, address));
  }
  session.device = *device;
  auto context = session.device->createContext(session.rank, 2, kContextName);
  if (!context) return context.status();
  session.context = *context;
  auto data = RegisteredBuffer::create(*session.context, dataRegionBytes(p));
  if (!data) return data.status().withContext("data buffer");
  session.data = std::move(*data);
  auto acks = RegisteredBuffer::create(*session.context, kAckSlots * kAckBytes);
  if (!acks) return acks.status().withContext("ack buffer");
  session.acks = std::move(*acks);
  session.side.device = fmt::format("{} {}", p.transport, address);
  session.side.local_address = session.device->listenAddress();
  return Status::ok();
}

Status publishRegion(Session& session) {
  const auto encoded = session.data->region().remote().serialize();
  return session.store->set(regionKey(session.rank), std::vector<uint8_t>(encoded.begin(), encoded.end()));
}

// Connects the pair and fetches the peer's region descriptor.
Status connectSides(Session& session) {
  POSEIDON_RETURN_IF_ERROR(session.context->connect(*session.store, session.deadline()));
  auto bytes = session.store->get(regionKey(1 - session.rank), session.deadline());
  if (!bytes) return bytes.status();
  auto remote = transport::RemoteDescriptor::parse(*bytes);
  if (!remote) return remote.status().withContext("the peer's region descriptor");
  session.peer_data = *remote;
  session.side.remote_address = session.pair().peerName();
  session.side.link = linkInfoOf(session.params.transport, session.pair());
  return Status::ok();
}

}  // namespace

Result<std::string> numericAddress(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "cannot resolve host '{}': {}", host, ::gai_strerror(rc));
  }
  // IPv4 first: "localhost" may list ::1 first, where a server on the IPv4 wildcard is not.
  const addrinfo* chosen = list;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      chosen = ai;
      break;
    }
  }
  std::string numeric = numericHost(chosen->ai_addr, chosen->ai_addrlen);
  ::freeaddrinfo(list);
  if (numeric.empty()) return makeStatus(StatusCode::kInvalidArgument, "host '{}' has no address", host);
  return numeric;
}

Result<std::string> routeSourceAddress(const std::string& numeric_host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* list = nullptr;
  if (::getaddrinfo(numeric_host.c_str(), "9", &hints, &list) != 0) {
    return makeStatus(StatusCode::kInvalidArgument, "'{}' is not a numeric address", numeric_host);
  }
  // Connecting a datagram socket only picks the route and the source address.
  const int fd = ::socket(list->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  std::string source;
  if (fd >= 0 && ::connect(fd, list->ai_addr, list->ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
      source = numericHost(reinterpret_cast<sockaddr*>(&local), length);
    }
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(list);
  if (source.empty()) {
    return makeStatus(StatusCode::kConnectionError, "no route to {}; give --bind ADDRESS", numeric_host);
  }
  return source;
}

Result<std::unique_ptr<Session>> acceptClient(const Options& options, void (*on_listening)(uint16_t port)) {
  auto session = std::make_unique<Session>();
  session->rank = 0;
  session->timeout = std::chrono::seconds(options.timeout_s);
  // As perftest's server: every address unless --bind names one. Only a client that proves the
  // secret gets a request acted on, so a stranger cannot hand this server its parameters.
  bootstrap::TcpStoreServerOptions server_options;
  server_options.secret = options.secret;
  auto server = bootstrap::TcpStoreServer::start(options.bind, options.port, server_options);
  if (!server) return server.status().withContext(fmt::format("serving the rendezvous on port {}", options.port));
  session->store_server = std::move(*server);
  if (on_listening != nullptr) on_listening(session->store_server->port());
  bootstrap::TcpStoreOptions store_options;
  store_options.secret = options.secret;
  const std::string self = options.bind.empty() ? "127.0.0.1" : options.bind;
  auto store = bootstrap::TcpStore::connect(self, session->store_server->port(), session->deadline(), store_options);
  if (!store) return store.status();
  session->store = std::move(*store);

  // perftest's server waits for its client as long as it takes.
  auto text = bootstrap::getString(*session->store, kParamsKey, Deadline::never());
  if (!text) return text.status();
  auto params = parametersFromJson(*text);
  Status verdict = params.status();
  if (params) {
    session->params = *params;
    const std::string address = options.bind.empty() ? params->server_address : options.bind;
    verdict = createSide(*session, options, address);
    if (verdict) verdict = publishRegion(*session);
    if (verdict.code() == StatusCode::kIoError && options.bind.empty()) {
      verdict = verdict.withContext(fmt::format(
          "listening on {}, the address the client reached this server at (behind NAT? give --bind ADDRESS)", address));
    }
  }
  POSEIDON_RETURN_IF_ERROR(
      bootstrap::setString(*session->store, kVerdictKey, verdict ? kOk : "error: " + verdict.toString()));
  POSEIDON_RETURN_IF_ERROR(verdict);
  POSEIDON_RETURN_IF_ERROR(connectSides(*session));
  return session;
}

Result<std::unique_ptr<Session>> connectToServer(const Options& options, RunParameters params) {
  auto session = std::make_unique<Session>();
  session->rank = 1;
  session->timeout = std::chrono::seconds(options.timeout_s);
  auto server = numericAddress(options.host);
  if (!server) return server.status();
  bootstrap::TcpStoreOptions store_options;
  store_options.secret = options.secret;
  auto store = bootstrap::TcpStore::connect(*server, options.port, session->deadline(), store_options);
  if (!store) return store.status().withContext("is the poseidon-perf server running?");
  session->store = std::move(*store);
  std::string address = options.bind;
  if (address.empty()) {
    auto source = routeSourceAddress(*server);
    if (!source) return source.status();
    address = *source;
  }
  params.server_address = *server;
  session->params = params;
  // Our side first: a client that cannot start leaves the server waiting for another one.
  POSEIDON_RETURN_IF_ERROR(createSide(*session, options, address));
  // A server runs one client, as perftest's: a second one is told so instead of mixing in.
  auto arrived = session->store->add(kClientsKey, 1);
  if (!arrived) return arrived.status();
  if (*arrived != 1) {
    return makeStatus(StatusCode::kUnavailable, "the poseidon-perf server at {}:{} is already serving another client",
                      *server, options.port);
  }
  POSEIDON_RETURN_IF_ERROR(publishRegion(*session));
  POSEIDON_RETURN_IF_ERROR(bootstrap::setString(*session->store, kParamsKey, parametersToJson(params)));
  auto verdict = bootstrap::getString(*session->store, kVerdictKey, session->deadline());
  if (!verdict) return verdict.status().withContext("waiting for the server to accept the parameters");
  if (*verdict != kOk) {
    return makeStatus(StatusCode::kUnavailable, "the server refused the run: {}", *verdict);
  }
  POSEIDON_RETURN_IF_ERROR(connectSides(*session));
  return session;
}

Status publishResults(Session& session, const std::string& json) {
  return bootstrap::setString(*session.store, kResultsKey, json);
}

Result<std::string> awaitResults(Session& session) {
  return bootstrap::getString(*session.store, kResultsKey, session.deadline());
}

// The server serves the store: it may exit only once the client has read the confirmation,
// or the client's last get() finds the store gone. So the client answers with a goodbye.
Status confirmResults(Session& session) {
  POSEIDON_RETURN_IF_ERROR(bootstrap::setString(*session.store, kConfirmKey, kOk));
  return bootstrap::getString(*session.store, kGoodbyeKey, session.deadline()).status();
}

Status awaitConfirmation(Session& session) {
  POSEIDON_RETURN_IF_ERROR(bootstrap::getString(*session.store, kConfirmKey, session.deadline()).status());
  return bootstrap::setString(*session.store, kGoodbyeKey, kOk);
}

}  // namespace poseidon::perf
