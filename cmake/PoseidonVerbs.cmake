# rdma-core: the verbs backend is built whenever libibverbs and librdmacm are found (or forced ON).
# They come as imported targets (FindRdmaCore.cmake), which the installed package finds again.
set(POSEIDON_HAVE_VERBS OFF)
if(NOT POSEIDON_WITH_VERBS STREQUAL "OFF")
  find_package(RdmaCore QUIET)
  if(RdmaCore_FOUND)
    set(POSEIDON_HAVE_VERBS ON)
  elseif(POSEIDON_WITH_VERBS STREQUAL "ON")
    message(FATAL_ERROR "POSEIDON_WITH_VERBS=ON but rdma-core was not found: install libibverbs-dev and librdmacm-dev")
  endif()
endif()
