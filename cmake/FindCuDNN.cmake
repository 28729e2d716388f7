# FindCuDNN: NVIDIA's cuDNN as the imported target CuDNN::cudnn (the header cudnn.h and the
# library libcudnn, which loads its sub-libraries itself). Looked for next to the CUDA toolkit
# (CUDAToolkit_INCLUDE_DIRS / CUDAToolkit_LIBRARY_DIR, where the toolkit's installers and the
# NVIDIA containers put it), then in the system's paths (the Debian / Ubuntu packages'
# /usr/include and /usr/lib/<multiarch>).
#
# Sets CuDNN_FOUND and CuDNN_VERSION (from cudnn_version.h). Hints: CMAKE_PREFIX_PATH or CuDNN_ROOT.
include(FindPackageHandleStandardArgs)

find_path(CuDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(CuDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
mark_as_advanced(CuDNN_INCLUDE_DIR CuDNN_LIBRARY)

set(CuDNN_VERSION "")
if(CuDNN_INCLUDE_DIR AND EXISTS "${CuDNN_INCLUDE_DIR}/cudnn_version.h")
  file(STRINGS "${CuDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_version_lines
    REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
  foreach(_part MAJOR MINOR PATCHLEVEL)
    string(REGEX REPLACE ".*#define CUDNN_${_part} +([0-9]+).*" "\\1" _cudnn_${_part} "${_cudnn_version_lines}")
  endforeach()
  set(CuDNN_VERSION "${_cudnn_MAJOR}.${_cudnn_MINOR}.${_cudnn_PATCHLEVEL}")
endif()

find_package_handle_standard_args(CuDNN REQUIRED_VARS CuDNN_LIBRARY CuDNN_INCLUDE_DIR VERSION_VAR CuDNN_VERSION)

if(CuDNN_FOUND AND NOT TARGET CuDNN::cudnn)
  add_library(CuDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CuDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CuDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CuDNN_INCLUDE_DIR}")
endif()
