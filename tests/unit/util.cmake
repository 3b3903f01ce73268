# common/util pieces with logic of their own: the latency histogram's buckets and text, the
# growable text buffer, JSON values as text, natural order.
railyard_test(test_hist SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_hist.c LIBS ry_util LABELS unit)
# The growable text buffer: growth, its max and sticky failure, printf, taking the text.
railyard_test(test_buf SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_buf.c LIBS ry_util LABELS unit)
# JSON values as text: each kind of scalar, the digits of a real, any value as text.
railyard_test(test_util_json SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_util_json.c LIBS ry_util
	LABELS unit)
# Natural order (host names, devices): digit runs as numbers, leading zeros, prefixes, NULL.
railyard_test(test_natcmp SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_natcmp.c LIBS ry_util LABELS unit)
