// Telling device memory from host memory, where every build and machine must agree: host
// pointers of every kind are host memory, also in a CUDA build on a machine without a GPU or
// driver (the runtime's "no device" / "insufficient driver" mean host memory, not an error), and
// registering them stages nothing. Also the descriptor's staged flag on the wire.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <array>
#include <vector>

#include "tests/support/mesh.h"
#include "transport/device.h"
#include "transport/device_memory.h"

namespace poseidon::transport {
namespace {

uint8_t static_bytes[4096];

TEST(DeviceMemory, TheBuiltinRuntimeIsTheBuilds) {
#ifdef POSEIDON_TEST_CUDA_BUILD
  EXPECT_STREQ(builtinDeviceMemory()->name(), "cuda");
#else
  EXPECT_STREQ(builtinDeviceMemory()->name(), "none");
#endif
  EXPECT_EQ(builtinDeviceMemory(), DeviceOptions{}.deviceMemory()) << "options without one use the build's";
}

TEST(DeviceMemory, HostPointersOfEveryKindAreHostMemory) {
  auto runtime = builtinDeviceMemory();
  std::vector<uint8_t> heap(1 << 20);
  std::array<uint8_t, 256> stack{};
  void* mapped = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  const std::vector<std::pair<const char*, std::pair<const void*, size_t>>> pointers = {
      {"heap", {heap.data(), heap.size()}},
      {"stack", {stack.data(), stack.size()}},
      {"static", {static_bytes, sizeof(static_bytes)}},
      {"mmap", {mapped, 1 << 20}},
      {"null, empty", {nullptr, 0}},
  };
  for (const auto& [what, range] : pointers) {
    auto device = runtime->isDeviceMemory(range.first, range.second);
    ASSERT_TRUE(device.isOk()) << what << ": " << device.status().toString();
    EXPECT_FALSE(*device) << what;
  }
  ::munmap(mapped, 1 << 20);
}

TEST(DeviceMemory, RegisteredHostMemoryIsNotStaged) {
  DeviceOptions options;
  options.secret = "device-memory";
  auto mesh = poseidon::testing::makeMesh(2, options, "device-memory");
  ASSERT_TRUE(mesh.isOk()) << mesh.status().toString();
  auto buffer = poseidon::testing::makeBuffer((*mesh)[0], 4096);
  EXPECT_FALSE(buffer.region->staged());
  EXPECT_EQ(buffer.region->wire(), buffer.bytes.data());
  EXPECT_FALSE(buffer.region->remote().staged);
  EXPECT_TRUE(buffer.region->stageOut(0, 4096).isOk()) << "staging host memory is nothing to do";
  EXPECT_TRUE(buffer.region->stageIn(0, 4096).isOk());
}

TEST(RemoteDescriptorFlags, StagedRoundTrips) {
  for (bool staged : {false, true}) {
    RemoteDescriptor d;
    d.backend = BackendTag::kVerbs;
    d.key = 7;
    d.address = 0x1000;
    d.length = 4096;
    d.staged = staged;
    auto parsed = RemoteDescriptor::parse(d.serialize());
    ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
    EXPECT_EQ(parsed->staged, staged);
    EXPECT_EQ(parsed->key, 7u);
    EXPECT_EQ(parsed->length, 4096u);
  }
}

TEST(RemoteDescriptorFlags, UnknownFlagBitsAreRefusedNamingThem) {
  RemoteDescriptor d;
  auto bytes = d.serialize();
  bytes[6] = 0x82;
  auto parsed = RemoteDescriptor::parse(bytes);
  ASSERT_FALSE(parsed.isOk());
  EXPECT_NE(parsed.status().message().find("flags 0x82"), std::string::npos) << parsed.status().message();
}

}  // namespace
}  // namespace poseidon::transport
