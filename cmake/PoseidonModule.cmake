# poseidon_module(NAME <folder> [SKIP <sub-folders...>] [LINK <targets...>]): the library of one
# top-level module (ps, sfb, ...): every *.cc of the folder, alias poseidon::<folder>, exported and
# installed with its headers under include/poseidon/<folder>. One place, so each module's
# CMakeLists says only what differs (what it links). SKIP names sub-folders that build a library of
# their own (trainer/reference: layers that use the library rather than belong to it).
function(poseidon_module)
  cmake_parse_arguments(M "" "NAME" "SKIP;LINK" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  foreach(skip ${M_SKIP})
    list(FILTER sources EXCLUDE REGEX "^${CMAKE_CURRENT_SOURCE_DIR}/${skip}/")
  endforeach()
  set(target poseidon_${M_NAME})
  add_library(${target} ${sources})
  add_library(poseidon::${M_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/poseidon>)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${M_NAME} OUTPUT_NAME ${target})
  target_link_libraries(${target} PUBLIC ${M_LINK})
  poseidon_set_warnings(${target})
  install(TARGETS ${target} EXPORT PoseidonTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/poseidon/${M_NAME}
    FILES_MATCHING PATTERN "*.h")
endfunction()
