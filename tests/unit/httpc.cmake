# common/httpc: the command lines' HTTP client against controller/http's server over a unix
# socket (URLs refused, requests and bodies, a stale or absent socket told apart).
railyard_test(test_httpc SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_httpc.c
	LIBS ry_httpc ry_http LABELS unit TIMEOUT 60)

find_program(VALGRIND valgrind)
if(VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_httpc_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_httpc>)
	set_tests_properties(test_httpc_valgrind PROPERTIES LABELS "unit;valgrind" TIMEOUT 120)
endif()
