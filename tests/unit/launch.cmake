# common/launch/orted.c: the orted command-line check of the launch relay (docs/bench.md,
# "Launching collectives without SSH").
railyard_test(test_orted_argv SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_orted_argv.c
	LIBS ry_launch LABELS unit)
# nodeagent/colljob.c: nccl-tests' all_reduce_perf table read into a railyard-coll document.
railyard_test(test_colljob SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_colljob.c
	LIBS ry_agent LABELS unit)
