railyard_test(test_wlm SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_wlm.c
	LIBS ry_controller LABELS unit)
