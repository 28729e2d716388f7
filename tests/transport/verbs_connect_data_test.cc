// The private data of the verbs backend's rdma_cm connect request and accept (peer input):
// round trips, what an older peer or rdma_cm's zero padding means, and what is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "transport/verbs/connect_data.h"

namespace poseidon::transport::verbs {
namespace {

ibv_gid gidOf(uint8_t last) {
  ibv_gid gid{};
  gid.raw[10] = 0xff;
  gid.raw[11] = 0xff;
  gid.raw[15] = last;
  return gid;
}

TEST(VerbsConnectData, RequestRoundTripsWithAndWithoutAGid) {
  ConnectRequest request;
  request.context_id = 0x0123456789abcdefULL;
  request.src_rank = 3;
  request.dst_rank = 1;
  auto plain = ConnectRequest::decode(request.encode().data(), ConnectRequest::kSize);
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->context_id, request.context_id);
  EXPECT_EQ(plain->src_rank, 3u);
  EXPECT_EQ(plain->dst_rank, 1u);
  EXPECT_FALSE(plain->source_gid.has_value());
  request.source_gid = gidOf(7);
  auto announced = ConnectRequest::decode(request.encode().data(), ConnectRequest::kSize);
  ASSERT_TRUE(announced.has_value() && announced->source_gid.has_value());
  EXPECT_EQ(std::memcmp(announced->source_gid->raw, request.source_gid->raw, 16), 0);
}

TEST(VerbsConnectData, RdmaCmPaddingAndOlderPeersMeanNoGid) {
  ConnectRequest request;
  request.context_id = 9;
  const auto bytes = request.encode();
  // rdma_cm hands the accepting side the whole private data area, zero padded.
  std::vector<uint8_t> padded(56, 0);
  std::memcpy(padded.data(), bytes.data(), bytes.size());
  auto decoded = ConnectRequest::decode(padded.data(), padded.size());
  ASSERT_TRUE(decoded.has_value());
  EXPECT_FALSE(decoded->source_gid.has_value());
  // An older peer sent the first 20 bytes only.
  decoded = ConnectRequest::decode(bytes.data(), ConnectRequest::kMinSize);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->context_id, 9u);
  EXPECT_FALSE(decoded->source_gid.has_value());
}

TEST(VerbsConnectData, ForeignOrShortDataIsRefused) {
  const auto bytes = ConnectRequest{}.encode();
  EXPECT_FALSE(ConnectRequest::decode(nullptr, 56).has_value());
  EXPECT_FALSE(ConnectRequest::decode(bytes.data(), ConnectRequest::kMinSize - 1).has_value());
  std::vector<uint8_t> foreign(bytes.begin(), bytes.end());
  foreign[0] ^= 1;
  EXPECT_FALSE(ConnectRequest::decode(foreign.data(), foreign.size()).has_value());
  // An accept reply is not a connect request, and the other way round.
  const auto reply = AcceptReply{gidOf(1)}.encode();
  EXPECT_FALSE(ConnectRequest::decode(reply.data(), reply.size()).has_value());
  EXPECT_FALSE(AcceptReply::decode(bytes.data(), bytes.size()).has_value());
}

TEST(VerbsConnectData, AcceptReplyRoundTrips) {
  const auto bytes = AcceptReply{gidOf(42)}.encode();
  auto reply = AcceptReply::decode(bytes.data(), bytes.size());
  ASSERT_TRUE(reply.has_value() && reply->source_gid.has_value());
  EXPECT_EQ(reply->source_gid->raw[15], 42);
  EXPECT_FALSE(AcceptReply::decode(bytes.data(), AcceptReply::kSize - 1).has_value());
  EXPECT_FALSE(AcceptReply::decode(nullptr, 196).has_value());
  // rdma_cm's own QP path accepts without private data: a zero-filled area decodes to nothing.
  const std::vector<uint8_t> zeros(196, 0);
  EXPECT_FALSE(AcceptReply::decode(zeros.data(), zeros.size()).has_value());
}

}  // namespace
}  // namespace poseidon::transport::verbs
