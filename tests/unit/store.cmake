# Unit tests of controller/store (migrations, tokens, enrollment, node states, revocation, audit).
railyard_test(test_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store.c
	LIBS ry_store Threads::Threads LABELS unit TIMEOUT 120)
