# Warnings for our own targets: poseidon_set_warnings(target)
# -Wundef: an identifier #if does not know reads as 0 without a word. A test of
# POSEIDON_UNDER_ASAN in a file that forgot common/sanitizers.h would quietly take the plain
# build's branch (as `defined(__SANITIZE_ADDRESS__)`, GCC's alone, once did under clang 14).
function(poseidon_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion-null
      -Wno-missing-field-initializers -Wundef>)
  if(POSEIDON_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()
