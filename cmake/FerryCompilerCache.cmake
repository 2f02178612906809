# ccache when it is installed: a second clone, a branch switch or a `make clean` then
# compiles only what changed. A launcher given on the command line or in the
# environment (CMAKE_CXX_COMPILER_LAUNCHER) wins; -DFERRY_CCACHE=OFF turns it off, and
# CCACHE_DISABLE=1 makes ccache run the compiler as if it were not there.
option(FERRY_CCACHE "Compile through ccache when it is installed" ON)
find_program(FERRY_CCACHE_PROGRAM ccache)
if(FERRY_CCACHE AND FERRY_CCACHE_PROGRAM)
  # The precompiled libtorch headers (cmake/FerryTorchPch.cmake) are cached only with this
  # sloppiness: ccache cannot see __TIME__ or a #define through a PCH, and ferry uses neither there.
  set(ferry_ccache_launcher ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=pch_defines,time_macros
      ${FERRY_CCACHE_PROGRAM})
  foreach(lang C CXX)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${ferry_ccache_launcher})
    endif()
  endforeach()
endif()
