#pragma once
// A test's own waits in a sanitizer build. Instrumented code runs 3x (ASan) to 10x (TSan) slower;
// ctest's limits grow by the same factor (POSEIDON_TEST_TIMEOUT_SCALE in the build), and the
// deadlines a test sets itself (a child's run, a training job's end) must grow with them or the
// test kills healthy work and reports a failure that is only the sanitizer's slowdown.

#include <chrono>

namespace poseidon::testing {

// 1 in a normal build, the sanitizer build's slowdown factor otherwise.
int timeout_scale();

// `limit` stretched by timeout_scale(): for deadlines, never for the work a test times.
inline std::chrono::milliseconds scaled(std::chrono::milliseconds limit) { return limit * timeout_scale(); }

}  // namespace poseidon::testing
