#include "tools/perf/link_info.h"

#include <fmt/format.h>

#include <cstdio>

#ifdef POSEIDON_HAVE_VERBS
#include "transport/verbs/pair.h"
#endif

namespace poseidon::perf {

LinkInfo linkInfoOf(const std::string& transport, transport::Pair& pair) {
  LinkInfo info;
  if (transport == "tcp") {
    info.link_type = "IP";
    return info;
  }
#ifdef POSEIDON_HAVE_VERBS
  if (auto* verbs = dynamic_cast<transport::verbs::VerbsPair*>(&pair)) {
    auto path = verbs->path();
    if (!path) {
      // The header is informational: say why it is missing and run anyway.
      fmt::print(stderr, "poseidon-perf: cannot read the queue pair's path: {}\n", path.status().toString());
      return info;
    }
    info.mtu_bytes = path->mtu_bytes;
    info.link_type = path->gid_type == "IB" ? "IB" : "Ethernet";  // perftest's link_layer_str
    info.gid_index = static_cast<int>(path->sgid_index);
    info.gid = path->gid;
  }
#else
  (void)pair;
#endif
  return info;
}

}  // namespace poseidon::perf
