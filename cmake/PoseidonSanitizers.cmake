# POSEIDON_SANITIZE: every object of the build checked at run time (tools/test-sanitizers).
#   address-undefined  ASan + UBSan: out-of-bounds, use-after-free, leaks, undefined behaviour
#   thread             TSan: data races and lock-order inversions
# UBSan stops at its first finding (-fno-sanitize-recover); ASan always does; TSan does under
# tools/test-sanitizers' TSAN_OPTIONS (halt_on_error=1). So a test that hits one fails rather than
# printing a report nobody reads. CUDA is left out of these builds: nvcc's host objects are
# not instrumented and the kernels run through their CPU twins here anyway.
set(POSEIDON_SANITIZE "" CACHE STRING "Sanitizer build: address-undefined, thread, or empty for none")
set_property(CACHE POSEIDON_SANITIZE PROPERTY STRINGS "" address-undefined thread)

# Instrumented code runs 2-3x (ASan) to 5-15x (TSan) slower: tests get that much longer to finish.
set(POSEIDON_TEST_TIMEOUT_SCALE 1)
# What tests/ and tools/ add to their compile options (below; empty when not sanitized), and
# what tests/ adds besides.
set(POSEIDON_SANITIZED_DRIVER_FLAGS "")
set(POSEIDON_SANITIZED_TEST_FLAGS "")
set(POSEIDON_SANITIZED_COMPUTE_TEST_FLAGS "")
if(POSEIDON_SANITIZE STREQUAL "")
  return()
endif()
if(POSEIDON_FUZZ)
  message(FATAL_ERROR "POSEIDON_SANITIZE and POSEIDON_FUZZ are separate builds (the fuzz build has ASan and UBSan already)")
endif()
if(POSEIDON_SANITIZE STREQUAL "address-undefined")
  set(poseidon_sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined)
  set(POSEIDON_TEST_TIMEOUT_SCALE 3)
elseif(POSEIDON_SANITIZE STREQUAL "thread")
  set(poseidon_sanitizer_flags -fsanitize=thread)
  set(POSEIDON_TEST_TIMEOUT_SCALE 10)
else()
  message(FATAL_ERROR "POSEIDON_SANITIZE is '${POSEIDON_SANITIZE}'; expected address-undefined, thread or empty")
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${poseidon_sanitizer_flags};-fno-omit-frame-pointer>")
# Sanitizer builds compile a target's sources eight to a file (CMake's unity build): each file
# then parses the headers the eight share once. The libraries the tests link, under ASan + UBSan
# (GCC, as all the figures below but the last), built in 223 s instead of 352 s on 2 cores (440 s of CPU instead of 695; 2026-11-29). These
# builds exist to run the tests instrumented; that every source compiles on its own, with its
# own includes and -Werror, is the plain build's check (tools/test: in its whole run, of the
# libraries, the tools and the suites it runs; most others have one source). Names private to a source
# (an anonymous namespace) must therefore differ within a target, or its batch fails to compile
# (none is shared today, in any batch). Sources of one batch are initialised in a fixed order, so
# ASan's strict_init_order sees order bugs only between batches.
if(NOT DEFINED CMAKE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()
# tools/test-sanitizers builds ASan + UBSan with clang, TSan with GCC: clang's clean ASan build
# took 792-825 s of CPU against GCC's 1168 (2026-11-29).
# Compile time: GCC with ASan + UBSan at -O2 took 2.4x the plain build's CPU (1085 s of 2 cores,
# the largest part of tools/test). The library is compiled at -O1, as ASan's documentation
# advises (close to -O2's speed; at -O0 it compiled in 105 s less CPU, but the unit and
# multiprocess tests then took 150 s more: 393 s against about 240 s), and the drivers in tests/
# and tools/ at -O0: their code is not what runs hot, and instrumented at -O1 or above each CLI11
# option parser alone took 30 s. Options come after CMAKE_CXX_FLAGS_<CONFIG>, so these win over its -O2; a source that sets
# its own (kernels' -O3) still wins over them.
add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-O1>")
set(POSEIDON_SANITIZED_DRIVER_FLAGS "$<$<COMPILE_LANGUAGE:CXX>:-O0>")
# Except test code that computes its own references over large arrays (the kernels' suites): at
# -O0 their random fills and double-precision loops took 44 of the ASan build's 265 s of test CPU
# (kernels_chunk_update_test alone, against 5 s in the plain build); they get the libraries' -O1.
# SHELL: keeps CMake from dropping it as a repeat of the -O1 above, which -O0 overrides.
set(POSEIDON_SANITIZED_COMPUTE_TEST_FLAGS "$<$<COMPILE_LANGUAGE:CXX>:SHELL:-O1>")
# The tests' own code is checked by ASan but not UBSan, whose checks made tests/ take a third
# longer to compile (all of it on 2 cores: 215 s with both, 160 s with ASan alone; ps_peer.cc
# 13.1 s against 8.4 s). The code under test, the libraries, keeps both, and so do the tools;
# the libraries' inline code and templates are checked where the libraries instantiate them.
if(POSEIDON_SANITIZE STREQUAL "address-undefined")
  set(POSEIDON_SANITIZED_TEST_FLAGS "$<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=undefined>")
endif()
add_link_options(${poseidon_sanitizer_flags})
# ASan + UBSan executables are linked without PIE. Their records of every global and of every
# UBSan check site hold pointers, which a PIE relocates at every start: 782 000 relocations in
# poseidon-server (2 200 in the plain build), each written page a copy-on-write fault. Without
# PIE the linker resolves them once. One start of `poseidon-server --help` took 297 ms of CPU
# with PIE and 194 ms without (perf stat -r 10, 2026-11-29), and the ASan tests start some
# thousands of processes: every test, and the children of the multi-process ones. TSan keeps
# PIE, the layout its runtime expects.
if(POSEIDON_SANITIZE STREQUAL "address-undefined")
  add_link_options("$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>")
endif()
