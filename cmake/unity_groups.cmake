# A target's units compiled together, in unity groups (CMake's UNITY_BUILD, GROUP mode).
#
# Most of a unit's compile time here is not its own code: it is parsing, instantiating and
# generating the same templates of the libraries it includes as its neighbours do — LibTorch's
# front end above all, then nlohmann-json, Boost.Program_options and GoogleTest. A group of units
# does that work once. Measured on this project's build (docs/benchmarks.md, "Unity groups"): the
# grouped units compile in 0.41 of their time alone, the whole build from scratch in 0.50.
#
# The groups: per target, its units in path order, split by whether they take the precompiled
# header (cmake/torch_pch.cmake) — a group is one command, with or without the header — into
# groups of at most SLAPO_UNITY_BATCH, of even sizes. Units with compile options of their own (the
# fused kernels') stay alone, as CMake requires. A unit's private names (anonymous namespaces,
# statics) share a scope with its group's: two with the same signature are a compile error, so
# such names are kept apart (each command's kReplayUsage, not kUsage); two overloads would resolve
# as in their own unit, each called with its own types.
include(${CMAKE_CURRENT_LIST_DIR}/compiled_targets.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/split_evenly.cmake)

function(_slapo_unity_group target source_dir kind units)
  list(LENGTH units count)
  if(count LESS 2)
    return()
  endif()
  list(SORT units)
  slapo_split_evenly("${units}" ${SLAPO_UNITY_BATCH} group)
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE GROUP)
  get_target_property(binary_dir ${target} BINARY_DIR)
  math(EXPR last "${group_count} - 1")
  foreach(group RANGE ${last})
    set_source_files_properties(${group_${group}} DIRECTORY "${source_dir}"
                                PROPERTIES UNITY_GROUP "${kind}_${group}")
    # CMake gives a target's precompiled header to every unity source it writes: the groups of
    # units without it are told so by name, the file CMake will write (its GROUP mode's naming).
    if(NOT kind STREQUAL "header")
      set_source_files_properties(
        "${binary_dir}/CMakeFiles/${target}.dir/Unity/unity_${kind}_${group}_cxx.cxx"
        DIRECTORY "${source_dir}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

function(slapo_unity_groups target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(reuses ${target} PRECOMPILE_HEADERS_REUSE_FROM)
  if(NOT sources)
    return()
  endif()
  set(with_header)
  set(without)
  foreach(source IN LISTS sources)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${source_dir}")
    if(NOT path MATCHES "\\.(cc|cpp|cxx)$")
      continue()
    endif()
    get_source_file_property(options "${path}" DIRECTORY "${source_dir}" COMPILE_OPTIONS)
    get_source_file_property(skip "${path}" DIRECTORY "${source_dir}" SKIP_PRECOMPILE_HEADERS)
    if(options)
      continue()
    elseif(reuses AND NOT skip)
      list(APPEND with_header "${path}")
    else()
      list(APPEND without "${path}")
    endif()
  endforeach()
  _slapo_unity_group(${target} "${source_dir}" header "${with_header}")
  _slapo_unity_group(${target} "${source_dir}" plain "${without}")
endfunction()

# Called once, after every target is made (and after the precompiled header is given out).
function(slapo_unity_groups_everywhere)
  slapo_compiled_targets(targets)
  foreach(target IN LISTS targets)
    slapo_unity_groups(${target})
  endforeach()
endfunction()
