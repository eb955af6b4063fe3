# The project's own targets that compile sources (not imported ones, not custom commands): what the
# build-wide settings of cmake/torch_pch.cmake and cmake/unity_groups.cmake walk, once every
# target exists.

function(_slapo_targets_under dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _slapo_targets_under("${sub}" nested)
    list(APPEND targets ${nested})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(slapo_compiled_targets out)
  _slapo_targets_under("${PROJECT_SOURCE_DIR}" all)
  set(compiled)
  foreach(target IN LISTS all)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      list(APPEND compiled ${target})
    endif()
  endforeach()
  set(${out} ${compiled} PARENT_SCOPE)
endfunction()
