# railyard-coll's arithmetic: nccl-tests' sizes and bus-bandwidth factors, the data checker
# catching a corrupted element, the node-pair schedule, the CPU figures.
railyard_test(test_coll_math SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_coll_math.c
	LIBS ry_coll m LABELS unit)
