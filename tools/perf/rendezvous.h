// Rendezvous: how a server and a client find each other, agree on the run and connect.
//
// The server (rank 0) serves a TcpStore on --port; the client (rank 1) connects to HOST:port,
// publishes its RunParameters and waits for the server's verdict. The server reads them before
// it creates anything (its device needs the client's -q), creates a device, a context of two
// and its buffers, publishes its region and "ok" (or the error that stopped it, which the
// client then reports), and both connect() through the store.
//
// Addresses: the server's data device listens on --bind, by default on the numeric address the
// client reached the store at (the client sends it): a wildcard such as 0.0.0.0 would be
// advertised to the client as is and is not connectable, while the address the client already
// reached is, by construction. The client's device listens on --bind, by default its own
// address on the route to HOST (the client connects out, so that only names it in logs).
#pragma once

#include <memory>
#include <string>

#include "tools/perf/buffers.h"
#include "tools/perf/options.h"
#include "tools/perf/parameters.h"
#include "tools/perf/report.h"
#include "transport/bootstrap/tcp_store.h"
#include "transport/bootstrap/tcp_store_server.h"
#include "transport/device.h"

namespace poseidon::perf {

inline constexpr const char* kContextName = "poseidon-perf";

struct Session {
  int rank = 0;
  RunParameters params;
  std::chrono::seconds timeout{60};
  std::unique_ptr<transport::bootstrap::TcpStoreServer> store_server;  // the server's only
  std::unique_ptr<transport::bootstrap::TcpStore> store;
  std::shared_ptr<transport::Device> device;
  std::shared_ptr<transport::Context> context;
  // Declared after the context: deregistered before it goes.
  std::unique_ptr<RegisteredBuffer> data;
  std::unique_ptr<RegisteredBuffer> acks;
  transport::RemoteDescriptor peer_data;
  SideInfo side;

  transport::Pair& pair() { return context->pair(1 - rank); }
  Deadline deadline() const { return Deadline::after(timeout); }
};

// Server: serves the store on options.port, waits (without limit, as perftest) for a client,
// adopts its parameters and connects. `on_listening` is called once the store listens.
Result<std::unique_ptr<Session>> acceptClient(const Options& options, void (*on_listening)(uint16_t port));

// Client: connects to the server, hands it `params` and connects.
Result<std::unique_ptr<Session>> connectToServer(const Options& options, RunParameters params);

// The client hands its results to the server at the end; the server answers when it has them,
// so neither side closes while the other still talks.
Status publishResults(Session& session, const std::string& json);
Result<std::string> awaitResults(Session& session);
Status confirmResults(Session& session);
Status awaitConfirmation(Session& session);

// "a.b.c.d" (or an IPv6 literal) for a host name or address; the first address it resolves to.
Result<std::string> numericAddress(const std::string& host);
// This host's address on the route to `numeric_host` (no packet is sent).
Result<std::string> routeSourceAddress(const std::string& numeric_host);

}  // namespace poseidon::perf
