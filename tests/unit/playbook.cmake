# common/playbook: parser, renderer, schema and the shipped playbooks against the fixture sysroots.
if(TARGET ry_playbook AND TARGET ry_facts)
	railyard_test(test_playbook SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_playbook.c
		LIBS ry_playbook ry_facts LABELS unit TIMEOUT 60)
endif()
