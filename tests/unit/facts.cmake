# nodeagent/facts: collectors over the fixture sysroots in tests/fixtures/sysroots.
if(TARGET ry_facts)
	railyard_test(test_facts SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_facts.c
		LIBS ry_facts Threads::Threads LABELS unit TIMEOUT 60)
endif()
