# Unit tests of nodeagent/bench: statistics, parameters and CLI parsing, the engine end to end
# over the tcp transport on 127.0.0.1 (threads in one process).
railyard_test(test_bench_stats SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_stats.c
	LIBS ry_bench m LABELS unit)
railyard_test(test_bench_cpu SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_cpu.c
	LIBS ry_bench m LABELS unit)
railyard_test(test_bench_params SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_params.c
	LIBS ry_bench LABELS unit)
railyard_test(test_bench_tcp SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_tcp.c
	LIBS ry_bench Threads::Threads m LABELS unit TIMEOUT 180)

# The engine under valgrind: every path of test_bench_tcp (peer death both ways, corrupted data,
# cancel, clock failures) must free what it took. Valgrind cannot run sanitized binaries.
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_bench_tcp_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_bench_tcp>)
	set_tests_properties(test_bench_tcp_valgrind PROPERTIES LABELS "unit;valgrind" TIMEOUT 300
		ENVIRONMENT "RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
