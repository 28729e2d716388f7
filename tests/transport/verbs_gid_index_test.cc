// DeviceOptions::gid_index: with an explicit index every queue pair uses that GID of the port as
// its source (read back from the QP, not taken on trust), data still moves both ways, and an
// index the port does not have fails at once with a message that names it. Runs where an RDMA
// device exists (the Soft-RoCE guest); skips, saying why, elsewhere.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "tests/support/mesh.h"
#include "tests/support/rdma.h"
#include "transport/verbs/device.h"
#include "transport/verbs/pair.h"

namespace poseidon::transport::verbs {
namespace {

using poseidon::testing::Buffer;
using poseidon::testing::makeBuffer;
using poseidon::testing::Mesh;

constexpr auto kTimeout = std::chrono::seconds(20);

DeviceOptions verbsOptions(int gid_index) {
  DeviceOptions options;
  options.backend = "verbs";
  options.address = poseidon::testing::rdmaTestAddress();
  options.secret = "verbs-gid-index";
  options.gid_index = gid_index;
  return options;
}

// One entry of the port's GID table as the kernel shows it; nothing when the entry is empty.
struct GidEntry {
  std::string gid;  // "::ffff:10.0.2.15"
  ibv_gid_type type = IBV_GID_TYPE_IB;
};

std::optional<GidEntry> gidEntry(ibv_context* verbs, uint8_t port, int index) {
  ibv_gid_entry entry{};
  if (ibv_query_gid_ex(verbs, port, static_cast<uint32_t>(index), &entry, 0) != 0) return std::nullopt;
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, entry.gid.raw, text, sizeof(text));
  if (std::string(text) == "::") return std::nullopt;
  return GidEntry{text, static_cast<ibv_gid_type>(entry.gid_type)};
}

// The port the test address lives on, found through a device in automatic mode.
struct PortTable {
  std::shared_ptr<Device> device;  // keeps the verbs context open
  ibv_context* verbs = nullptr;
  uint8_t port = 0;
  int length = 0;
};

PortTable portOfTheAddress() {
  auto mesh = poseidon::testing::makeMesh(2, verbsOptions(-1), "verbs-gid-probe");
  if (!mesh) throw StatusError(mesh.status());
  auto& pair = dynamic_cast<VerbsPair&>((*mesh)[1].pair(0));
  auto path = pair.path();
  if (!path) throw StatusError(path.status());
  PortTable table;
  table.device = mesh->devices[1];
  table.verbs = dynamic_cast<VerbsDevice&>(*table.device).verbs();
  table.port = path->port;
  ibv_port_attr attr{};
  if (ibv_query_port(table.verbs, table.port, &attr) != 0) throw std::runtime_error("ibv_query_port failed");
  table.length = attr.gid_tbl_len;
  return table;
}

// The pair of `rank` sends from GID `index`, which holds `expected`.
void expectSourceGid(Mesh& mesh, int rank, int index, const GidEntry& expected) {
  auto& pair = dynamic_cast<VerbsPair&>(mesh[rank].pair(1 - rank));
  auto path = pair.path();
  ASSERT_TRUE(path.isOk()) << path.status().toString();
  SCOPED_TRACE(fmt::format("rank {}: {}", rank, path->toString()));
  EXPECT_EQ(path->sgid_index, static_cast<uint32_t>(index));
  EXPECT_EQ(path->gid, expected.gid);
}

// A message and a one-sided write cross in each direction: each QP addresses the other's real
// source GID (rxe drops RC packets whose IP addresses differ from the receiving QP's GIDs).
void expectDataMoves(Mesh& mesh) {
  for (int from = 0; from < 2; ++from) {
    const int to = 1 - from;
    Buffer out = makeBuffer(mesh[from], 8192, static_cast<uint8_t>(3 + from));
    Buffer in = makeBuffer(mesh[to], 8192, 0);
    auto recv = mesh[to].pair(from).recv(5, *in.region, 0, 4096);
    auto send = mesh[from].pair(to).send(5, *out.region, 0, 4096);
    auto note = mesh[to].pair(from).recvImm();
    auto write = mesh[from].pair(to).write(*out.region, 4096, in.region->remote(), 4096, 4096, 77);
    for (const RequestPtr& r : {send, recv, write, note}) {
      ASSERT_TRUE(r->wait(Deadline::after(kTimeout)).isOk()) << r->status().toString();
    }
    EXPECT_EQ(note->imm(), 77u);
    EXPECT_EQ(std::memcmp(in.bytes.data(), out.bytes.data(), in.bytes.size()), 0) << "from rank " << from;
  }
}

void expectConnectedOver(Mesh& mesh, int index, const GidEntry& expected) {
  for (int rank = 0; rank < 2; ++rank) expectSourceGid(mesh, rank, index, expected);
  expectDataMoves(mesh);
}

class VerbsGidIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    if (poseidon::testing::rdmaTestAddress().empty()) GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
    table_ = portOfTheAddress();
  }

  // The first RoCE v2 entry holding an IPv4-mapped GID that `accept`s; -1 when none does.
  template <typename Accept>
  int findRoceV2(Accept accept) const {
    for (int i = 0; i < std::min(table_.length, 256); ++i) {
      auto entry = gidEntry(table_.verbs, table_.port, i);
      if (entry && entry->type == IBV_GID_TYPE_ROCE_V2 && entry->gid.rfind("::ffff:", 0) == 0 && accept(entry->gid)) {
        return i;
      }
    }
    return -1;
  }
  int ownAddressIndex() const {
    const std::string own = "::ffff:" + poseidon::testing::rdmaTestAddress();
    return findRoceV2([&](const std::string& gid) { return gid == own; });
  }
  // The GID of a second IPv4 address of the netdev (the softroce test adds one): one rdma_cm
  // never picks for the test address. The kernel adds it from a work queue: allow a moment.
  int otherAddressIndex() const {
    const std::string own = "::ffff:" + poseidon::testing::rdmaTestAddress();
    for (int attempt = 0; attempt < 50; ++attempt) {
      const int index = findRoceV2([&](const std::string& gid) { return gid != own; });
      if (index >= 0) return index;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  GidEntry entry(int index) const { return gidEntry(table_.verbs, table_.port, index).value_or(GidEntry{}); }

  PortTable table_;
};

constexpr const char* kNoSecondAddress = "the netdev has no second IPv4 address (add one with `ip addr add`)";

TEST_F(VerbsGidIndex, RoceV2GidOfTheAddressByIndex) {
  // The index is looked up, not assumed: the entry holding the address's IPv4-mapped GID.
  const int index = ownAddressIndex();
  ASSERT_GE(index, 0) << "no RoCE v2 GID ::ffff:" << poseidon::testing::rdmaTestAddress() << " on the port";
  if (const char* guest = std::getenv("SOFTROCE_VM_GID_INDEX")) {
    EXPECT_EQ(index, std::atoi(guest)) << "tools/softroce-vm says the RoCE v2 GID is at " << guest;
  }
  auto mesh = poseidon::testing::makeMesh(2, verbsOptions(index), "verbs-gid-v2");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  expectConnectedOver(*mesh, index, entry(index));
}

// Both ranks given `index`: each fails promptly (no peer left waiting for its deadline), saying
// which index and what the port has.
void expectRefusedPromptly(int index, const std::string& why) {
  Mesh mesh;
  const auto start = std::chrono::steady_clock::now();
  auto statuses =
      poseidon::testing::connectMesh(mesh, {verbsOptions(index), verbsOptions(index)}, "verbs-gid-bad", kTimeout);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(5)) << "refusing GID index " << index << " must not wait for a deadline";
  for (const Status& st : statuses) {
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.toString();
    EXPECT_NE(st.message().find(fmt::format("GID index {} ", index)), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("port "), std::string::npos) << st.message();
  }
}

TEST_F(VerbsGidIndex, IndexPastTheTableFailsNamingIt) {
  expectRefusedPromptly(std::min(table_.length, 256), fmt::format("({} entries", table_.length));
}

TEST_F(VerbsGidIndex, EmptyEntryFailsNamingIt) {
  constexpr int kIndex = 200;
  if (kIndex >= table_.length) GTEST_SKIP() << "the GID table has only " << table_.length << " entries";
  if (gidEntry(table_.verbs, table_.port, kIndex)) GTEST_SKIP() << "GID index 200 is in use on this port";
  expectRefusedPromptly(kIndex, "is empty");
}

TEST_F(VerbsGidIndex, AnotherAddressOfTheNetdevByIndex) {
  // The QP reporting a GID rdma_cm would not pick shows the override took effect.
  const int index = otherAddressIndex();
  if (index < 0) GTEST_SKIP() << kNoSecondAddress;
  SCOPED_TRACE(fmt::format("GID[{}] = {}", index, entry(index).gid));
  auto mesh = poseidon::testing::makeMesh(2, verbsOptions(index), "verbs-gid-other");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  expectConnectedOver(*mesh, index, entry(index));
}

TEST_F(VerbsGidIndex, ConnectingSideAloneChoosesAndTheAcceptingSideFollows) {
  // Rank 1 connects to rank 0. Rank 1 announces the GID it chose; rank 0 keeps rdma_cm's
  // source GID but addresses rank 1's choice.
  const int index = otherAddressIndex();
  if (index < 0) GTEST_SKIP() << kNoSecondAddress;
  Mesh mesh;
  auto statuses =
      poseidon::testing::connectMesh(mesh, {verbsOptions(-1), verbsOptions(index)}, "verbs-gid-mixed", kTimeout);
  for (const Status& st : statuses) ASSERT_TRUE(st.isOk()) << st.toString();
  expectSourceGid(mesh, 0, ownAddressIndex(), entry(ownAddressIndex()));
  expectSourceGid(mesh, 1, index, entry(index));
  expectDataMoves(mesh);
}

TEST_F(VerbsGidIndex, AcceptingSideAloneChoosingAnotherGidIsRefusedSayingWhy) {
  // Rank 1 lets rdma_cm pick, so its QP would address rank 0's address GID, not the one rank 0
  // was told to send from: rank 0 refuses, rank 1 hears so at once.
  const int index = otherAddressIndex();
  if (index < 0) GTEST_SKIP() << kNoSecondAddress;
  Mesh mesh;
  const auto start = std::chrono::steady_clock::now();
  auto statuses = poseidon::testing::connectMesh(mesh, {verbsOptions(index), verbsOptions(-1)}, "verbs-gid-refused",
                                                 std::chrono::seconds(3));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(statuses[1].isOk());
  EXPECT_NE(statuses[1].message().find("REJECTED"), std::string::npos) << statuses[1].message();
  ASSERT_FALSE(statuses[0].isOk());
  EXPECT_NE(statuses[0].message().find(fmt::format("not to GID index {} which this side was told to send from", index)),
            std::string::npos)
      << statuses[0].message();
  EXPECT_NE(statuses[0].message().find("same gid_index setting"), std::string::npos) << statuses[0].message();
}

TEST_F(VerbsGidIndex, IndexZeroConnectsOnlyWhenItIsOfTheAddressFamily) {
  // On Ethernet ports entry 0 is usually the netdev's IPv6 link-local GID (fe80::...), which
  // cannot carry traffic to the IPv4-mapped GID of an IPv4 peer: the kernel refuses such a QP,
  // so the device refuses the index up front instead, saying why.
  auto entry = gidEntry(table_.verbs, table_.port, 0);
  ASSERT_TRUE(entry.has_value()) << "GID index 0 is empty on this port";
  SCOPED_TRACE("GID[0] = " + entry->gid);
  const bool address_is_v4 = poseidon::testing::rdmaTestAddress().find(':') == std::string::npos;
  const bool gid_is_v4 = entry->gid.rfind("::ffff:", 0) == 0;
  if (entry->type == IBV_GID_TYPE_IB || address_is_v4 == gid_is_v4) {
    auto mesh = poseidon::testing::makeMesh(2, verbsOptions(0), "verbs-gid-zero");
    ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
    expectConnectedOver(*mesh, 0, *entry);
    return;
  }
  expectRefusedPromptly(0, fmt::format("is {}, an {} GID", entry->gid, gid_is_v4 ? "IPv4" : "IPv6"));
}

}  // namespace
}  // namespace poseidon::transport::verbs
