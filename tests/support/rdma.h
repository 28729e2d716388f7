// Test support: where the verbs backend can run. Tests that need an RDMA device take the address
// of a netdev that carries one from POSEIDON_TEST_RDMA_ADDRESS, or from SOFTROCE_VM_SELF inside a
// tools/softroce-vm guest, and skip with kNoRdmaDevice elsewhere.
#pragma once

#include <cstdlib>
#include <string>

namespace poseidon::testing {

inline constexpr const char* kNoRdmaDevice =
    "no RDMA device here: set POSEIDON_TEST_RDMA_ADDRESS to the address of an RDMA netdev "
    "(tools/softroce-vm runs this on Soft-RoCE)";

// The address, or "" when there is no RDMA device to test on.
inline std::string rdmaTestAddress() {
  for (const char* name : {"POSEIDON_TEST_RDMA_ADDRESS", "SOFTROCE_VM_SELF"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != 0) return value;
  }
  return "";
}

}  // namespace poseidon::testing
