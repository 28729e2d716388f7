# poseidon_install_headers(MODULE <folder> HEADERS <paths inside the folder...>): installs each
# header under include/poseidon/<folder>/<its sub-folder> and records it, as "<folder>/<path>", in
# the global property POSEIDON_INSTALLED_HEADERS. tests/package checks that list is closed: an
# installed header that includes an uninstalled one would break every user who includes it.
function(poseidon_install_headers)
  cmake_parse_arguments(H "" "MODULE" "HEADERS" ${ARGN})
  foreach(header ${H_HEADERS})
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${header})
      message(FATAL_ERROR "poseidon_install_headers(${H_MODULE}): ${header} is not a file of "
        "${CMAKE_CURRENT_SOURCE_DIR}; expected a path inside the module's folder")
    endif()
    get_filename_component(dir ${header} DIRECTORY)
    install(FILES ${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/poseidon/${H_MODULE}/${dir})
    set_property(GLOBAL APPEND PROPERTY POSEIDON_INSTALLED_HEADERS ${H_MODULE}/${header})
  endforeach()
endfunction()

# poseidon_module(NAME <folder> PUBLIC_HEADERS <headers...> [SKIP <sub-folders...>] [LINK <targets...>]):
# the library of one top-level module (ps, sfb, ...): every *.cc of the folder, alias
# poseidon::<folder>, exported and installed. One place, so each module's CMakeLists says only what
# differs (what it links, what it offers). PUBLIC_HEADERS (paths inside the folder) are what a
# user of the module includes, and the headers those include; they alone are installed, under
# include/poseidon/<folder>, so internal helpers can change freely. SKIP names sub-folders that
# build a library of their own (trainer/reference: layers that use the library rather than belong
# to it).
function(poseidon_module)
  cmake_parse_arguments(M "" "NAME" "PUBLIC_HEADERS;SKIP;LINK" ${ARGN})
  if(NOT M_PUBLIC_HEADERS)
    message(FATAL_ERROR "poseidon_module(${M_NAME}): no PUBLIC_HEADERS; expected the headers a user of the module "
      "includes")
  endif()
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
  poseidon_install_headers(MODULE ${M_NAME} HEADERS ${M_PUBLIC_HEADERS})
endfunction()
