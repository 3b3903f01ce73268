# common/launch/orted.c: the orted command-line check of the launch relay (docs/bench.md,
# "Launching collectives without SSH").
railyard_test(test_orted_argv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_orted_argv.c
	LIBS ry_launch LABELS unit)
