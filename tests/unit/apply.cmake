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
# The driver-stack executors and the OpenPGP reader under valgrind: every path (fetch refused,
# rollback, bad armor) frees what it took. Valgrind cannot run sanitized binaries.
find_program(VALGRIND valgrind)
if(TARGET test_apply_driver AND VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_apply_driver_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_apply_driver>)
	set_tests_properties(test_apply_driver_valgrind PROPERTIES LABELS "unit;valgrind"
		TIMEOUT 300 SKIP_RETURN_CODE 77
		ENVIRONMENT "RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
