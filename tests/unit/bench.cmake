# Unit tests of nodeagent/bench: statistics, parameters and CLI parsing, the engine end to end
# over the tcp transport on 127.0.0.1 (threads in one process).
railyard_test(test_bench_stats SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_stats.c
	LIBS ry_bench m LABELS unit)
railyard_test(test_bench_params SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_params.c
	LIBS ry_bench LABELS unit)
railyard_test(test_bench_tcp SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_tcp.c
	LIBS ry_bench Threads::Threads LABELS unit TIMEOUT 180)
