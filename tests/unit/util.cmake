# common/util pieces with logic of their own: the latency histogram's buckets and text.
railyard_test(test_hist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hist.c LIBS ry_util LABELS unit)
