#include "transport/common/mesh_connect.h"

#include "transport/bootstrap/store.h"

namespace poseidon::transport {
namespace {
std::string addressKey(const std::string& context, const std::string& address_kind, int rank) {
  return fmt::format("poseidon/transport/{}/{}/{}", context, address_kind, rank);
}
}  // namespace

Status connectToLowerRanks(bootstrap::Store& store, const Context& context, const std::string& address_kind,
                           const std::string& own_address, Deadline deadline,
                           const std::function<Status(int peer, const std::string& address)>& connect_to) {
  const std::vector<uint8_t> own_bytes(own_address.begin(), own_address.end());
  POSEIDON_RETURN_IF_ERROR(store.set(addressKey(context.name(), address_kind, context.rank()), own_bytes));
  for (int peer = 0; peer < context.rank(); ++peer) {
    auto bytes = store.get(addressKey(context.name(), address_kind, peer), deadline);
    if (!bytes) {
      return bytes.status().withContext(fmt::format("context '{}': address of rank {}", context.name(), peer));
    }
    const std::string address(bytes->begin(), bytes->end());
    POSEIDON_RETURN_IF_ERROR(connect_to(peer, address).withContext(fmt::format("context '{}'", context.name())));
  }
  return Status::ok();
}

}  // namespace poseidon::transport
