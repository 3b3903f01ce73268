railyard_test(test_codec SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_codec.c
	LIBS ry_agent ry_rpc ry_proto ry_util LABELS unit)
