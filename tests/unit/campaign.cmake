# controller/campaign: the scheduler (pure).
railyard_test(test_schedule SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_schedule.c
	LIBS ry_campaign LABELS unit TIMEOUT 120)
