# slapo_split_evenly(ITEMS MAX PREFIX): the list ITEMS cut, in its order, into as few runs of at
# most MAX items as it takes, of even sizes (10 items at most 8 a run: 5 and 5, not 8 and 2).
# Sets PREFIX_count (the runs) and PREFIX_0 ... in the caller's scope. Both the unity groups of a
# target's units (cmake/unity_groups.cmake) and the groups of a test binary's tests
# (cmake/test_groups_list.cmake) are cut so.
function(slapo_split_evenly items max prefix)
  list(LENGTH items count)
  math(EXPR runs "(${count} + ${max} - 1) / ${max}")
  foreach(run RANGE ${runs})
    set(run_${run})
  endforeach()
  set(index 0)
  foreach(item IN LISTS items)
    math(EXPR run "${index} * ${runs} / ${count}")
    list(APPEND run_${run} "${item}")
    math(EXPR index "${index} + 1")
  endforeach()
  set(${prefix}_count ${runs} PARENT_SCOPE)
  math(EXPR last "${runs} - 1")
  if(last GREATER_EQUAL 0)
    foreach(run RANGE ${last})
      set(${prefix}_${run} "${run_${run}}" PARENT_SCOPE)
    endforeach()
  endif()
endfunction()
