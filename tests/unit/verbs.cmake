# Unit tests of nodeagent/bench/verbs (pure logic; no RDMA device needed).
if(RAILYARD_HAVE_VERBS)
	railyard_test(test_verbs_gid SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_verbs_gid.c
		LIBS ry_verbs LABELS unit)
endif()
