# Unit tests of nodeagent/bench/verbs and the engine's verbs transport (pure logic and the
# checks made before a device is opened; no RDMA device needed).
if(RAILYARD_HAVE_VERBS)
	railyard_test(test_verbs_gid SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_verbs_gid.c
		LIBS ry_verbs LABELS unit)
	if(TARGET ry_bench AND EXISTS ${CMAKE_SOURCE_DIR}/nodeagent/bench/transport_verbs.c)
		railyard_test(test_verbs_transport
			SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_verbs_transport.c
			LIBS ry_bench ry_verbs LABELS unit)
	endif()
endif()
