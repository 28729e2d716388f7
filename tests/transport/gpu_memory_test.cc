// GPU memory through the transport, for real: cudaMalloc'd buffers registered on each backend
// (TCP: always host staging; verbs: dma-buf where the GPU, driver, kernel and NIC support it,
// host staging otherwise), then the exchanges of device_exchange.h. Compiled in every CUDA
// build; skips, saying why, where cudaGetDeviceCount fails or finds no device, and the verbs
// cases also where no RDMA device exists.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/device_exchange.h"
#include "tests/support/rdma.h"
#include "transport/device.h"

namespace poseidon::transport {
namespace {

// Why GPU tests cannot run here, or "" when they can.
std::string noGpuReason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();
    return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(error) + " (" + cudaGetErrorString(error) +
           ")";
  }
  if (count == 0) return "cudaGetDeviceCount found no CUDA device";
  return "";
}

class CudaBuffers final : public poseidon::testing::DeviceBuffers {
 public:
  ~CudaBuffers() override {
    for (void* p : allocations_) cudaFree(p);
  }
  uint8_t* allocate(size_t length) override {
    void* p = nullptr;
    const cudaError_t error = cudaMalloc(&p, length);
    if (error != cudaSuccess) throw std::runtime_error(std::string("cudaMalloc: ") + cudaGetErrorString(error));
    allocations_.push_back(p);
    return static_cast<uint8_t*>(p);
  }
  void upload(uint8_t* device, const uint8_t* host, size_t length) override {
    check(cudaMemcpy(device, host, length, cudaMemcpyHostToDevice));
  }
  void download(uint8_t* host, const uint8_t* device, size_t length) override {
    check(cudaMemcpy(host, device, length, cudaMemcpyDeviceToHost));
  }

 private:
  static void check(cudaError_t error) {
    if (error != cudaSuccess) throw std::runtime_error(std::string("cudaMemcpy: ") + cudaGetErrorString(error));
  }
  std::vector<void*> allocations_;
};

TEST(GpuMemory, CudaPointersAreToldApart) {
  if (const auto why = noGpuReason(); !why.empty()) GTEST_SKIP() << why;
  auto runtime = builtinDeviceMemory();
  void* device = nullptr;
  void* pinned = nullptr;
  void* managed = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&pinned, 1 << 20), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&managed, 1 << 20), cudaSuccess);
  EXPECT_TRUE(*runtime->isDeviceMemory(device, 1 << 20)) << "cudaMalloc";
  EXPECT_FALSE(*runtime->isDeviceMemory(pinned, 1 << 20)) << "cudaMallocHost: host memory, registered as it is";
  EXPECT_FALSE(*runtime->isDeviceMemory(managed, 1 << 20)) << "cudaMallocManaged: host-addressable";
  cudaFree(device);
  cudaFreeHost(pinned);
  cudaFree(managed);
}

class GpuExchange : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const auto why = noGpuReason(); !why.empty()) GTEST_SKIP() << why;
    if (GetParam() == "verbs" && poseidon::testing::rdmaTestAddress().empty()) {
      GTEST_SKIP() << poseidon::testing::kNoRdmaDevice;
    }
    DeviceOptions o;
    o.backend = GetParam();
    o.secret = "gpu-secret";
    if (o.backend == "verbs") o.address = poseidon::testing::rdmaTestAddress();
    auto m = poseidon::testing::makeMesh(2, o, "gpu");
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    mesh_ = std::move(*m);
  }
  CudaBuffers cuda_;
  poseidon::testing::Mesh mesh_;
};

TEST_P(GpuExchange, RegistersDeviceMemory) {
  auto buffer = poseidon::testing::makeDeviceBuffer(mesh_[0], cuda_, 1 << 20, 1);
  EXPECT_EQ(buffer.region->data(), buffer.data);
  if (GetParam() == "tcp") {
    EXPECT_TRUE(buffer.region->staged()) << "TCP reaches device memory only by staging";
  }
  std::printf("%s: device memory registered %s\n", GetParam().c_str(),
              buffer.region->staged() ? "through host staging" : "directly (dma-buf)");
}

TEST_P(GpuExchange, SendAndReceive) { poseidon::testing::sendRecvDeviceToDevice(mesh_, cuda_); }
TEST_P(GpuExchange, SendvMixesHostAndDeviceSlices) { poseidon::testing::sendvMixedHostAndDeviceSlices(mesh_, cuda_); }
TEST_P(GpuExchange, WritesIntoDeviceMemory) { poseidon::testing::writesIntoDeviceMemoryInOrder(mesh_, cuda_); }
TEST_P(GpuExchange, WriteFromDeviceMemory) { poseidon::testing::writeFromDeviceMemory(mesh_, cuda_); }

INSTANTIATE_TEST_SUITE_P(Backends, GpuExchange, ::testing::Values("tcp", "verbs"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace poseidon::transport
