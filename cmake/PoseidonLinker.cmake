# The linker for our executables and shared objects. LLVM's lld where the compiler can use it:
# the build links some 300 executables (a test suite each), and GNU ld took 0.8 s of CPU for a
# test executable that lld links in 0.25 s (trainer_session_test, measured). POSEIDON_LINKER=
# default keeps the compiler's own linker; another value is passed as -fuse-ld=<value>.
include(CheckLinkerFlag)

set(POSEIDON_LINKER "lld" CACHE STRING "Linker for -fuse-ld (lld, gold, bfd, mold), or 'default'")
if(NOT POSEIDON_LINKER STREQUAL "default")
  check_linker_flag(CXX "-fuse-ld=${POSEIDON_LINKER}" POSEIDON_HAVE_LINKER_${POSEIDON_LINKER})
  if(POSEIDON_HAVE_LINKER_${POSEIDON_LINKER})
    # C++ links only: nvcc's device link does not take the flag.
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=${POSEIDON_LINKER}>)
  else()
    message(STATUS "Poseidon: ${CMAKE_CXX_COMPILER_ID} cannot link with -fuse-ld=${POSEIDON_LINKER}; "
                   "using its default linker (tools/build installs lld)")
  endif()
endif()
