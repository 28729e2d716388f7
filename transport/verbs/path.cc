#include "transport/verbs/path.h"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <cstring>

namespace poseidon::transport::verbs {

uint32_t mtuBytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256: return 256;
    case IBV_MTU_512: return 512;
    case IBV_MTU_1024: return 1024;
    case IBV_MTU_2048: return 2048;
    case IBV_MTU_4096: return 4096;
  }
  return 0;
}

std::string QueuePairPath::toString() const {
  return fmt::format("port {}, GID index {} ({} {}), path MTU {}", port, sgid_index, gid_type, gid, mtu_bytes);
}

Result<QueuePairPath> queryPath(ibv_qp* qp, ibv_context* verbs) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (const int rc = ibv_query_qp(qp, &attr, IBV_QP_AV | IBV_QP_PATH_MTU, &init); rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_query_qp: {}", std::strerror(rc));
  }
  QueuePairPath path;
  path.port = attr.ah_attr.port_num;
  path.sgid_index = attr.ah_attr.grh.sgid_index;
  path.mtu_bytes = mtuBytes(attr.path_mtu);
  ibv_gid_entry entry{};
  if (const int rc = ibv_query_gid_ex(verbs, path.port, path.sgid_index, &entry, 0); rc != 0) {
    return makeStatus(StatusCode::kIoError, "ibv_query_gid_ex(port {}, index {}): {}", path.port, path.sgid_index,
                      std::strerror(rc));
  }
  switch (entry.gid_type) {
    case IBV_GID_TYPE_IB: path.gid_type = "IB"; break;
    case IBV_GID_TYPE_ROCE_V1: path.gid_type = "RoCE v1"; break;
    case IBV_GID_TYPE_ROCE_V2: path.gid_type = "RoCE v2"; break;
    default: path.gid_type = fmt::format("type {}", entry.gid_type); break;
  }
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, entry.gid.raw, text, sizeof(text));
  path.gid = text;
  return path;
}

}  // namespace poseidon::transport::verbs
