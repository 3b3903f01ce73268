# nodeagent/apply: runner, path safety, diffs, versions, executors and plans on fixture copies
# (test doubles from tests/fixtures/bin are installed into each copy's usr/local/sbin).
if(TARGET ry_apply)
	foreach(t core runner exec driver plan)
		if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/test_apply_${t}.c)
			railyard_test(test_apply_${t}
				SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_apply_${t}.c
					${CMAKE_CURRENT_LIST_DIR}/test_apply_util.c
				LIBS ry_apply LABELS unit TIMEOUT 120)
		endif()
	endforeach()
endif()
