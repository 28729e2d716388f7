// The translation unit that builds the tests' precompiled header (tests/CMakeLists.txt): every
// test target reuses it, so GoogleTest and the standard headers most tests include
// are parsed once per build instead of once per test source. No tests of its own.
