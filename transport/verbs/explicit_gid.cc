#include "transport/verbs/explicit_gid.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace poseidon::transport::verbs {
namespace {

const char* stateName(ibv_qp_state state) {
  switch (state) {
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    default: return "another state";
  }
}

std::string gidText(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof(text));
  return text;
}

// The attributes rdma_cm computes for moving `id`'s QP to `state`.
Status cmAttributes(rdma_cm_id* id, ibv_qp_state state, ibv_qp_attr& attr, int& mask, const std::string& peer) {
  attr = ibv_qp_attr{};
  mask = 0;
  attr.qp_state = state;
  if (rdma_init_qp_attr(id, &attr, &mask) != 0) {
    return errnoStatus(StatusCode::kConnectionError,
                       fmt::format("rdma_init_qp_attr for {} of the queue pair to {}", stateName(state), peer));
  }
  return Status::ok();
}

Status modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const std::string& peer, const std::string& detail = {}) {
  if (const int rc = ibv_modify_qp(qp, &attr, mask); rc != 0) {
    return makeStatus(StatusCode::kConnectionError, "moving the queue pair to {} to {}{}: {}", peer,
                      stateName(attr.qp_state), detail, std::strerror(rc));
  }
  return Status::ok();
}

// rdma_cm's RTR attributes with our choices in: the source GID index and the peer's GID.
Status patchAddress(ibv_qp_attr& attr, int mask, int sgid_index, const ibv_gid* peer_gid, const std::string& peer,
                    std::string& detail) {
  ibv_global_route& grh = attr.ah_attr.grh;
  // Without a GRH (InfiniBand inside one subnet) no GID is used: an index would be ignored.
  if (!(mask & IBV_QP_AV) || attr.ah_attr.is_global == 0) {
    if (sgid_index < 0) return Status::ok();
    return makeStatus(StatusCode::kInvalidArgument,
                      "GID index {} for {}: the path has no global route header, so no GID applies "
                      "(leave gid_index at -1)",
                      sgid_index, peer);
  }
  if (sgid_index >= 0 && peer_gid == nullptr && grh.sgid_index != sgid_index) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "{} lets rdma_cm pick its GID, so its queue pair sends to GID index {} of this side, not to "
                      "GID index {} which this side was told to send from: give every rank the same gid_index "
                      "setting",
                      peer, grh.sgid_index, sgid_index);
  }
  if (sgid_index >= 0) grh.sgid_index = static_cast<uint8_t>(sgid_index);
  detail = fmt::format(" with source GID index {}", grh.sgid_index);
  if (peer_gid != nullptr) {
    grh.dgid = *peer_gid;
    detail += fmt::format(" and the peer's GID {}", gidText(*peer_gid));
  }
  return Status::ok();
}

// "10.0.2.15" or "fe80::1" (no port): how the error names the address.
std::string hostText(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw = address->sa_family == AF_INET
                        ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(address)->sin_addr)
                        : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  inet_ntop(address->sa_family, raw, text, sizeof(text));
  return text;
}

}  // namespace

Status checkGidIndex(ibv_context* verbs, uint8_t port, int index, const sockaddr* local) {
  const char* device = ibv_get_device_name(verbs->device);
  ibv_port_attr attr{};
  if (const int rc = ibv_query_port(verbs, port, &attr); rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_query_port({} port {}): {}", device, port, std::strerror(rc));
  }
  // ah_attr.grh.sgid_index is 8 bits wide: a larger table still only offers its first 256.
  const int usable = std::min(attr.gid_tbl_len, 256);
  if (index < 0 || index >= usable) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "GID index {} is outside the GID table of {} port {} ({} entries{}): expected 0..{}", index,
                      device, port, attr.gid_tbl_len, usable < attr.gid_tbl_len ? ", 256 addressable" : "", usable - 1);
  }
  ibv_gid_entry entry{};
  const int rc = ibv_query_gid_ex(verbs, port, static_cast<uint32_t>(index), &entry, 0);
  const bool zero = std::all_of(std::begin(entry.gid.raw), std::end(entry.gid.raw), [](uint8_t b) { return b == 0; });
  if (rc == ENODATA || (rc == 0 && zero)) {
    return makeStatus(StatusCode::kInvalidArgument,
                      "GID index {} of {} port {} is empty (no address behind it; the table has {} entries, "
                      "see `ibv_devinfo -v -d {}`)",
                      index, device, port, attr.gid_tbl_len, device);
  }
  if (rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_query_gid_ex({} port {}, index {}): {}", device, port, index,
                      std::strerror(rc));
  }
  if (entry.gid_type == IBV_GID_TYPE_IB || local == nullptr) return Status::ok();
  const in6_addr* gid = reinterpret_cast<const in6_addr*>(entry.gid.raw);
  const int gid_family = IN6_IS_ADDR_V4MAPPED(gid) ? AF_INET : AF_INET6;
  if (gid_family != local->sa_family) {
    auto family = [](int f) { return f == AF_INET ? "IPv4" : "IPv6"; };
    return makeStatus(StatusCode::kInvalidArgument,
                      "GID index {} of {} port {} is {}, an {} GID, but the address {} is {}: RoCE packets from it "
                      "cannot reach {} peers (pick the index of a GID of that address, or leave gid_index at -1)",
                      index, device, port, gidText(entry.gid), family(gid_family), hostText(local),
                      family(local->sa_family), family(local->sa_family));
  }
  return Status::ok();
}

Status moveToInit(rdma_cm_id* id, ibv_qp* qp, const std::string& peer) {
  ibv_qp_attr attr{};
  int mask = 0;
  POSEIDON_RETURN_IF_ERROR(cmAttributes(id, IBV_QPS_INIT, attr, mask, peer));
  return modify(qp, attr, mask, peer);
}

Result<ibv_gid> moveToRts(rdma_cm_id* id, ibv_qp* qp, int sgid_index, const ibv_gid* peer_gid,
                          const std::string& peer) {
  // INIT once more first: on the active side the QP reached INIT before the connection existed,
  // with no remote access; rdma_cm's attributes now include what the connection grants.
  POSEIDON_RETURN_IF_ERROR(moveToInit(id, qp, peer));
  ibv_qp_attr attr{};
  int mask = 0;
  POSEIDON_RETURN_IF_ERROR(cmAttributes(id, IBV_QPS_RTR, attr, mask, peer));
  std::string detail;
  POSEIDON_RETURN_IF_ERROR(patchAddress(attr, mask, sgid_index, peer_gid, peer, detail));
  POSEIDON_RETURN_IF_ERROR(modify(qp, attr, mask, peer, detail));
  ibv_gid source{};
  if (const int rc = ibv_query_gid(id->verbs, attr.ah_attr.port_num, attr.ah_attr.grh.sgid_index, &source); rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_query_gid(port {}, index {}) for {}: {}", attr.ah_attr.port_num,
                      attr.ah_attr.grh.sgid_index, peer, std::strerror(errno));
  }
  POSEIDON_RETURN_IF_ERROR(cmAttributes(id, IBV_QPS_RTS, attr, mask, peer));
  POSEIDON_RETURN_IF_ERROR(modify(qp, attr, mask, peer));
  return source;
}

}  // namespace poseidon::transport::verbs
