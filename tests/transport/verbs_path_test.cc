// Nothing guessed: the queue pairs rdma_cm sets up use the GID of the netdev that carries the
// configured address (RoCE v2 on Ethernet ports that have it) and the port's active MTU. Runs
// where an RDMA device exists (the Soft-RoCE guest); skips, saying why, elsewhere.
#include <gtest/gtest.h>

#include "tests/support/mesh.h"
#include "tests/support/rdma.h"
#include "transport/verbs/device.h"
#include "transport/verbs/pair.h"

namespace poseidon::transport::verbs {
namespace {

TEST(VerbsPath, GidOfTheAddressAndMtuOfThePort) {
  if (poseidon::testing::rdmaTestAddress().empty()) GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
  DeviceOptions options;
  options.backend = "verbs";
  options.address = poseidon::testing::rdmaTestAddress();
  options.secret = "verbs-path";
  auto mesh = poseidon::testing::makeMesh(2, options, "verbs-path");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto& device = dynamic_cast<VerbsDevice&>(*mesh->devices[0]);
  for (int rank = 0; rank < 2; ++rank) {
    auto& pair = dynamic_cast<VerbsPair&>((*mesh)[rank].pair(1 - rank));
    auto path = pair.path();
    ASSERT_TRUE(path.isOk()) << path.status().toString();
    SCOPED_TRACE(path->toString());
    ibv_port_attr port{};
    ASSERT_EQ(ibv_query_port(device.verbs(), path->port, &port), 0);
    EXPECT_EQ(path->mtu_bytes, mtuBytes(port.active_mtu));
    if (port.link_layer == IBV_LINK_LAYER_ETHERNET) {
      EXPECT_EQ(path->gid, "::ffff:" + poseidon::testing::rdmaTestAddress())
          << "the GID must be the IPv4-mapped one of the address";
      EXPECT_EQ(path->gid_type, "RoCE v2");
    }
  }
}

}  // namespace
}  // namespace poseidon::transport::verbs
