#include "tests/support/timeouts.h"

// Defined for poseidon_test_process alone (tests/CMakeLists.txt).
#ifndef POSEIDON_TEST_TIMEOUT_SCALE
#error "POSEIDON_TEST_TIMEOUT_SCALE comes from the build (cmake/PoseidonSanitizers.cmake)"
#endif

namespace poseidon::testing {

int timeout_scale() { return POSEIDON_TEST_TIMEOUT_SCALE; }

}  // namespace poseidon::testing
