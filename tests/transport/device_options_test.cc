// DeviceOptions::validate(): every field is checked before a device is made, and a refusal
// names the field, the value and what was expected. No network or RDMA device is needed.
#include <gtest/gtest.h>

#include "transport/device.h"

namespace poseidon::transport {
namespace {

TEST(DeviceOptions, GidIndexIsAutomaticByDefaultAndAcceptsAnyTableIndex) {
  DeviceOptions options;
  EXPECT_EQ(options.gid_index, -1);
  EXPECT_TRUE(options.validate().isOk());
  options.gid_index = 0;
  EXPECT_TRUE(options.validate().isOk());
  // Whether an index exists is the device's to say, not the options'.
  options.gid_index = 255;
  EXPECT_TRUE(options.validate().isOk());
}

TEST(DeviceOptions, GidIndexBelowMinusOneIsRefusedNamingIt) {
  DeviceOptions options;
  options.gid_index = -2;
  const Status st = options.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("gid_index -2"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("-1 (automatic)"), std::string::npos) << st.message();
  // createDevice() checks the options first, for every backend.
  auto device = createDevice(options);
  ASSERT_FALSE(device.isOk());
  EXPECT_NE(device.status().message().find("gid_index -2"), std::string::npos) << device.status().message();
}

TEST(DeviceOptions, MaxWriteBytesOutsideWhatOneRdmaWriteCarriesIsRefusedNamingIt) {
  DeviceOptions options;
  EXPECT_EQ(options.max_write_bytes, uint64_t{1} << 30);
  options.max_write_bytes = 4096;
  EXPECT_TRUE(options.validate().isOk());
  options.max_write_bytes = uint64_t{1} << 31;
  EXPECT_TRUE(options.validate().isOk());
  for (uint64_t bad : {uint64_t{0}, uint64_t{4095}, (uint64_t{1} << 31) + 1}) {
    options.max_write_bytes = bad;
    const Status st = options.validate();
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(st.message().find("max_write_bytes " + std::to_string(bad)), std::string::npos) << st.message();
  }
}

TEST(DeviceOptions, FrameEncryptionNeedsTcpAndASecret) {
  DeviceOptions options;
  EXPECT_FALSE(options.encrypt_frames);
  options.encrypt_frames = true;
  options.secret = "s";
  EXPECT_TRUE(options.validate().isOk());
  options.secret.clear();
  Status st = options.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("encrypt_frames without a secret"), std::string::npos) << st.message();
  options.secret = "s";
  options.backend = "verbs";
  st = options.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("encrypt_frames with backend 'verbs'"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace poseidon::transport
