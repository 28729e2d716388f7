// openStore: the Store this rank rendezvouses through, as its LaunchInfo describes.
//
// With file_store_dir set, every rank opens a FileStore there. Otherwise rank 0 serves a TCP
// store on root_host:root_port and connects to it like everyone else; the returned Store owns
// that server, so rank 0 must keep it until the others are done with it (end with a barrier;
// destroying it then waits, a few seconds at most, for the others to close their connections, so
// one that has not yet read the barrier's end still can: TcpStoreServerOptions::leave_timeout).
// A job of size 1 serves on an ephemeral port instead, so single-process runs never clash.
#pragma once

#include <memory>

#include "common/deadline.h"
#include "transport/bootstrap/launch_env.h"
#include "transport/bootstrap/store.h"

namespace poseidon::transport::bootstrap {

// The deadline bounds connecting to rank 0, which may start after this rank. `secret` is the
// job's (DeviceOptions::secret): the TCP store serves only clients that prove it, and every
// request and reply is authenticated with it. A FileStore is guarded by the directory's
// permissions instead (docs/threat-model.md).
Result<std::unique_ptr<Store>> openStore(const LaunchInfo& info, Deadline deadline, const std::string& secret);

}  // namespace poseidon::transport::bootstrap
