# One precompiled <torch/torch.h> for every translation unit that parses LibTorch's C++ front end.
#
# Parsing LibTorch's headers is much of such a unit's compile time: a test of the schedule engine
# takes 27 s in the front end alone, 12.6 s with the header precompiled (GCC 12, this machine,
# 2026-11-30; docs/benchmarks.md, "Build"). The header is built once, in slapo_torch_pch, and
# reused by every target (slapo_use_torch_pch_everywhere(), called once all exist): a precompiled
# header is only valid for units compiled with the same options and macros, and these all share
# LibTorch's and OpenMP's. Loading it costs about 7 s (570 MB): it pays only in a unit that parses
# LibTorch's C++ front end — <torch/torch.h> or a <torch/nn/...> header, directly or through the
# project's headers. Units that see only tensors (ATen/, c10/) took 1.6 times as long with it,
# one that sees no LibTorch would pay the 7 s for nothing: both are left without it.
include(${CMAKE_CURRENT_LIST_DIR}/compiled_targets.cmake)
find_package(OpenMP REQUIRED)

add_library(slapo_torch_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/torch_pch.cc)
target_link_libraries(slapo_torch_pch PRIVATE ${TORCH_LIBRARIES} OpenMP::OpenMP_CXX)
target_include_directories(slapo_torch_pch PRIVATE ${TORCH_INCLUDE_DIRS})
target_precompile_headers(slapo_torch_pch PRIVATE <torch/torch.h>)

# Sets ${out} to TRUE when `file` includes LibTorch's C++ front end (<torch/torch.h> or a
# <torch/nn/...> header), directly or through the project's own headers (found from the source
# tree's root, as the sources name them, or beside the file). Each file is read once per
# configuration.
function(_slapo_includes_torch file out)
  get_property(known GLOBAL PROPERTY "_slapo_torch:${file}" SET)
  if(known)
    get_property(answer GLOBAL PROPERTY "_slapo_torch:${file}")
    set(${out} ${answer} PARENT_SCOPE)
    return()
  endif()
  # While the file is being read it counts as no LibTorch, so an include cycle ends; a header of
  # such a cycle may then be judged without what the rest of the cycle includes (a unit left
  # without the header: slower to compile, never wrong).
  set_property(GLOBAL PROPERTY "_slapo_torch:${file}" FALSE)
  file(STRINGS "${file}" includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(dir "${file}" DIRECTORY)
  set(answer FALSE)
  foreach(line IN LISTS includes)
    if(line MATCHES "[<\"]torch/(torch\\.h|nn/)")
      set(answer TRUE)
      break()
    endif()
    if(NOT line MATCHES "[<\"]([^>\"]+)[>\"]")
      continue()
    endif()
    set(name "${CMAKE_MATCH_1}")
    foreach(candidate "${PROJECT_SOURCE_DIR}/${name}" "${dir}/${name}")
      if(EXISTS "${candidate}" AND NOT IS_DIRECTORY "${candidate}")
        _slapo_includes_torch("${candidate}" nested)
        if(nested)
          set(answer TRUE)
        endif()
        break()
      endif()
    endforeach()
    if(answer)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "_slapo_torch:${file}" ${answer})
  set(${out} ${answer} PARENT_SCOPE)
endfunction()

# Gives `target`'s units that parse LibTorch's front end the shared precompiled header. A unit
# compiled with options of its own (set_source_files_properties(... COMPILE_OPTIONS), the fused
# kernels' -fno-math-errno for one) defines macros the header was not built with: left out.
function(slapo_use_torch_pch target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  if(NOT sources)
    return()
  endif()
  set(uses FALSE)
  set(skipped)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    get_source_file_property(options "${path}" DIRECTORY "${source_dir}" COMPILE_OPTIONS)
    set(torch FALSE)
    if(path MATCHES "\\.(cc|cpp|cxx)$" AND NOT options)
      _slapo_includes_torch("${path}" torch)
    endif()
    if(torch)
      set(uses TRUE)
    else()
      list(APPEND skipped "${path}")
    endif()
  endforeach()
  if(uses)
    if(skipped)
      set_source_files_properties(${skipped} DIRECTORY "${source_dir}"
                                  PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
    target_precompile_headers(${target} REUSE_FROM slapo_torch_pch)
  endif()
endfunction()

# Called once, after every target is made: a new target needs nothing to get the header.
function(slapo_use_torch_pch_everywhere)
  slapo_compiled_targets(targets)
  foreach(target IN LISTS targets)
    if(NOT target STREQUAL "slapo_torch_pch")
      slapo_use_torch_pch(${target})
    endif()
  endforeach()
endfunction()
