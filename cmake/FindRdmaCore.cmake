# FindRdmaCore: rdma-core's libibverbs and librdmacm as imported targets, RdmaCore::ibverbs and
# RdmaCore::rdmacm. Poseidon's own build and an installed PoseidonConfig.cmake both use this
# module, so the exported PoseidonTargets.cmake names these targets instead of the libraries'
# paths on the machine that built it; each consumer finds rdma-core again on its own machine.
#
# Sets RdmaCore_FOUND. Hints: the usual CMAKE_PREFIX_PATH, or RdmaCore_ROOT.
include(FindPackageHandleStandardArgs)

find_path(RdmaCore_IBVERBS_INCLUDE_DIR infiniband/verbs.h)
find_library(RdmaCore_IBVERBS_LIBRARY ibverbs)
find_path(RdmaCore_RDMACM_INCLUDE_DIR rdma/rdma_cma.h)
find_library(RdmaCore_RDMACM_LIBRARY rdmacm)
mark_as_advanced(RdmaCore_IBVERBS_INCLUDE_DIR RdmaCore_IBVERBS_LIBRARY RdmaCore_RDMACM_INCLUDE_DIR
  RdmaCore_RDMACM_LIBRARY)

find_package_handle_standard_args(RdmaCore
  REQUIRED_VARS RdmaCore_IBVERBS_LIBRARY RdmaCore_IBVERBS_INCLUDE_DIR RdmaCore_RDMACM_LIBRARY
    RdmaCore_RDMACM_INCLUDE_DIR)

if(RdmaCore_FOUND)
  if(NOT TARGET RdmaCore::ibverbs)
    add_library(RdmaCore::ibverbs UNKNOWN IMPORTED)
    set_target_properties(RdmaCore::ibverbs PROPERTIES
      IMPORTED_LOCATION "${RdmaCore_IBVERBS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RdmaCore_IBVERBS_INCLUDE_DIR}")
  endif()
  if(NOT TARGET RdmaCore::rdmacm)
    add_library(RdmaCore::rdmacm UNKNOWN IMPORTED)
    set_target_properties(RdmaCore::rdmacm PROPERTIES
      IMPORTED_LOCATION "${RdmaCore_RDMACM_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${RdmaCore_RDMACM_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES RdmaCore::ibverbs)
  endif()
endif()
