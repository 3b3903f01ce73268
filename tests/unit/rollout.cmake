railyard_test(test_rollout SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rollout.c
	LIBS ry_rollout LABELS unit)
