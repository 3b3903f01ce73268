# controller: refusal throttling (enrollment per source, audit rows per node).
railyard_test(test_throttle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_throttle.c
	LIBS ry_controller LABELS unit)
