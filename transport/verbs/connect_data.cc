#include "transport/verbs/connect_data.h"

#include <algorithm>
#include <cstring>

#include "transport/wire/little_endian.h"

namespace poseidon::transport::verbs {
namespace {

constexpr uint32_t kConnectMagic = 0x52435350;  // "PSCR"
constexpr uint32_t kAcceptMagic = 0x52415350;   // "PSAR"

void storeGid(uint8_t* out, const std::optional<ibv_gid>& gid) {
  if (gid) std::memcpy(out, gid->raw, sizeof(gid->raw));
}

std::optional<ibv_gid> loadGid(const uint8_t* in) {
  ibv_gid gid{};
  std::memcpy(gid.raw, in, sizeof(gid.raw));
  if (std::all_of(std::begin(gid.raw), std::end(gid.raw), [](uint8_t b) { return b == 0; })) return std::nullopt;
  return gid;
}

}  // namespace

std::array<uint8_t, ConnectRequest::kSize> ConnectRequest::encode() const {
  std::array<uint8_t, kSize> out{};
  wire::storeLe32(&out[0], kConnectMagic);
  wire::storeLe64(&out[4], context_id);
  wire::storeLe32(&out[12], src_rank);
  wire::storeLe32(&out[16], dst_rank);
  storeGid(&out[20], source_gid);
  return out;
}

std::optional<ConnectRequest> ConnectRequest::decode(const void* data, size_t length) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (bytes == nullptr || length < kMinSize || wire::loadLe32(bytes) != kConnectMagic) return std::nullopt;
  ConnectRequest request;
  request.context_id = wire::loadLe64(bytes + 4);
  request.src_rank = wire::loadLe32(bytes + 12);
  request.dst_rank = wire::loadLe32(bytes + 16);
  if (length >= kSize) request.source_gid = loadGid(bytes + 20);
  return request;
}

std::array<uint8_t, AcceptReply::kSize> AcceptReply::encode() const {
  std::array<uint8_t, kSize> out{};
  wire::storeLe32(&out[0], kAcceptMagic);
  storeGid(&out[4], source_gid);
  return out;
}

std::optional<AcceptReply> AcceptReply::decode(const void* data, size_t length) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (bytes == nullptr || length < kSize || wire::loadLe32(bytes) != kAcceptMagic) return std::nullopt;
  AcceptReply reply;
  reply.source_gid = loadGid(bytes + 4);
  return reply;
}

}  // namespace poseidon::transport::verbs
