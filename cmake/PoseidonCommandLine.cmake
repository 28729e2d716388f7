# poseidon_parses_command_line(<source>...): sources that include CLI11 (<CLI/CLI.hpp>) compile at
# -O1 in a Release or RelWithDebInfo build. CLI11 2.1 is header-only, with no precompiled mode, so every unit that
# includes it compiles its parser anew: a unit that only parses one option took GCC 11.6 s at -O2
# and 5.8 s at -O1 (2026-11-29). A command line is parsed once; none of that code is hot. Call it
# in the directory that adds the sources (source properties belong to a directory). Sanitizer
# builds compile tools/ and tests/ at -O0 already (cmake/PoseidonSanitizers.cmake), and this would
# raise them.
function(poseidon_parses_command_line)
  if(POSEIDON_SANITIZE)
    return()
  endif()
  set_source_files_properties(${ARGN} PROPERTIES
    COMPILE_OPTIONS "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CONFIG:Release,RelWithDebInfo>>:-O1>")
endfunction()
