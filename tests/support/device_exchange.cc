#include "tests/support/device_exchange.h"

#include <gtest/gtest.h>

namespace poseidon::testing {

using namespace poseidon;
using namespace poseidon::transport;

namespace {
constexpr auto kTimeout = std::chrono::seconds(60);
// Several TCP stripes and more than one verbs control round, with odd ends.
constexpr size_t kSize = (3u << 20) + 5;

long long firstMismatchOf(const std::vector<uint8_t>& bytes, size_t from, size_t length, size_t pattern_offset,
                          uint8_t seed) {
  for (size_t i = 0; i < length; ++i) {
    if (bytes[from + i] != patternByte(pattern_offset + i, seed)) return static_cast<long long>(from + i);
  }
  return -1;
}
}  // namespace

DeviceBuffer makeDeviceBuffer(Context& context, DeviceBuffers& device, size_t size, uint8_t seed) {
  DeviceBuffer buffer;
  buffer.data = device.allocate(size);
  buffer.size = size;
  std::vector<uint8_t> pattern(size);
  fillPattern(pattern.data(), size, seed);
  device.upload(buffer.data, pattern.data(), size);
  auto region = context.registerMemory(buffer.data, size);
  if (!region) throw StatusError(region.status());
  buffer.region = std::move(*region);
  return buffer;
}

std::vector<uint8_t> readBack(DeviceBuffers& device, const DeviceBuffer& buffer) {
  std::vector<uint8_t> bytes(buffer.size);
  device.download(bytes.data(), buffer.data, buffer.size);
  return bytes;
}

void sendRecvDeviceToDevice(Mesh& m, DeviceBuffers& device) {
  DeviceBuffer out = makeDeviceBuffer(m[0], device, kSize, 1);
  DeviceBuffer in = makeDeviceBuffer(m[1], device, kSize + 100, 2);
  // Into the middle of the receiving region, from an offset of the sending one.
  const size_t length = kSize - 3;
  auto r = m[1].pair(0).recv(4, *in.region, 50, length);
  auto s = m[0].pair(1).send(4, *out.region, 3, length);
  ASSERT_TRUE(s->wait(Deadline::after(kTimeout)).isOk()) << s->status().toString();
  ASSERT_TRUE(r->wait(Deadline::after(kTimeout)).isOk()) << r->status().toString();
  EXPECT_EQ(r->bytes(), length);
  const auto got = readBack(device, in);
  EXPECT_EQ(firstMismatchOf(got, 50, length, 3, 1), -1) << "message bytes on the device";
  EXPECT_EQ(firstMismatchOf(got, 0, 50, 0, 2), -1) << "bytes before the posted range changed";
  EXPECT_EQ(firstMismatchOf(got, 50 + length, got.size() - 50 - length, 50 + length, 2), -1)
      << "bytes after the posted range changed";
}

void sendvMixedHostAndDeviceSlices(Mesh& m, DeviceBuffers& device) {
  DeviceBuffer from_device = makeDeviceBuffer(m[0], device, 70000, 3);
  Buffer from_host = makeBuffer(m[0], 50000, 4);
  DeviceBuffer in = makeDeviceBuffer(m[1], device, 120000, 5);
  const Slice slices[] = {
      {from_host.region.get(), 1000, 20000}, {from_device.region.get(), 0, 70000}, {from_host.region.get(), 0, 1000}};
  auto r = m[1].pair(0).recv(8, *in.region, 0, in.size);
  auto s = m[0].pair(1).sendv(8, slices);
  ASSERT_TRUE(s->wait(Deadline::after(kTimeout)).isOk()) << s->status().toString();
  ASSERT_TRUE(r->wait(Deadline::after(kTimeout)).isOk()) << r->status().toString();
  ASSERT_EQ(r->bytes(), 91000u);
  const auto got = readBack(device, in);
  EXPECT_EQ(firstMismatchOf(got, 0, 20000, 1000, 4), -1) << "first host slice";
  EXPECT_EQ(firstMismatchOf(got, 20000, 70000, 0, 3), -1) << "device slice";
  EXPECT_EQ(firstMismatchOf(got, 90000, 1000, 0, 4), -1) << "last host slice";
}

void writesIntoDeviceMemoryInOrder(Mesh& m, DeviceBuffers& device) {
  DeviceBuffer target = makeDeviceBuffer(m[1], device, kSize, 6);
  Buffer source = makeBuffer(m[0], kSize, 7);
  const RemoteDescriptor remote = target.region->remote();
  // Consecutive pieces of the region, the last one empty: each immediate must find its piece
  // (and every earlier one) already on the device.
  const std::vector<std::pair<size_t, size_t>> pieces = {
      {0, 4096}, {4096, 1u << 20}, {(1u << 20) + 4096, kSize - (1u << 20) - 4096}, {kSize, 0}};
  std::vector<RequestPtr> writes;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto [offset, length] = pieces[i];
    writes.push_back(
        m[0].pair(1).write(*source.region, offset, remote, offset, length, static_cast<uint32_t>(100 + i)));
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto note = m[1].pair(0).recvImm();
    ASSERT_TRUE(note->wait(Deadline::after(kTimeout)).isOk()) << note->status().toString();
    EXPECT_EQ(note->imm(), 100 + i);
    const auto got = readBack(device, target);
    const size_t landed = pieces[i].first + pieces[i].second;
    EXPECT_EQ(firstMismatchOf(got, 0, landed, 0, 7), -1) << "after immediate " << note->imm();
  }
  ASSERT_TRUE(waitAll(writes, Deadline::after(kTimeout)).isOk());
}

void writeFromDeviceMemory(Mesh& m, DeviceBuffers& device) {
  DeviceBuffer source = makeDeviceBuffer(m[0], device, kSize, 8);
  Buffer target = makeBuffer(m[1], kSize, 9);
  auto w = m[0].pair(1).write(*source.region, 10, target.region->remote(), 20, kSize - 20, 42);
  auto note = m[1].pair(0).recvImm();
  ASSERT_TRUE(note->wait(Deadline::after(kTimeout)).isOk()) << note->status().toString();
  ASSERT_TRUE(w->wait(Deadline::after(kTimeout)).isOk()) << w->status().toString();
  EXPECT_EQ(note->imm(), 42u);
  EXPECT_EQ(firstMismatchOf(target.bytes, 20, kSize - 20, 10, 8), -1);
  EXPECT_EQ(firstMismatchOf(target.bytes, 0, 20, 0, 9), -1);
}

}  // namespace poseidon::testing
