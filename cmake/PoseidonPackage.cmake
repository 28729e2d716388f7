# Install rules and the CMake package config, so another project can
#   find_package(Poseidon) and target_link_libraries(app poseidon::transport)
include(CMakePackageConfigHelpers)
install(EXPORT PoseidonTargets NAMESPACE poseidon:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Poseidon)
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/PoseidonConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/PoseidonConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Poseidon)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/PoseidonConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/PoseidonConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/PoseidonConfigVersion.cmake
  ${CMAKE_CURRENT_SOURCE_DIR}/cmake/FindRdmaCore.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Poseidon)
