# libtorch's <ATen/ATen.h> precompiled once and shared by the eval engine's targets:
# it is most of the compile of a file that includes it (14.8 s of a models/ file, 7.4 s
# with the PCH here). -DFERRY_TORCH_PCH=OFF compiles without it if it ever misbehaves.
option(FERRY_TORCH_PCH "Precompile libtorch's headers for the eval engine's targets" ON)

# ferry_torch_pch(TARGET OWNER [SKIP file.cc...]): TARGET's files are compiled with
# <ATen/ATen.h> precompiled, by OWNER (TARGET itself, or a target built first whose PCH
# it reuses). GCC uses a PCH only in a compile with the same -fPIC/-fPIE and predefined
# macros, so the engine's static libraries (-fPIC) share one, cpu/ (-fopenmp defines
# _OPENMP) has its own, and executables (-fPIE) another. CMake adds -Winvalid-pch: a PCH
# GCC cannot use, and so reads as plain text, is a warning. SKIP names TARGET's files
# that do not include libtorch: loading the PCH would only slow them (1-2 s each).
function(ferry_torch_pch target owner)
  cmake_parse_arguments(P "" "" "SKIP" ${ARGN})
  if(NOT FERRY_TORCH_PCH)
    return()
  endif()
  if(target STREQUAL owner)
    target_precompile_headers(${target} PRIVATE <ATen/ATen.h>)
  else()
    target_precompile_headers(${target} REUSE_FROM ${owner})
  endif()
  if(P_SKIP)
    set_source_files_properties(${P_SKIP} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
endfunction()
