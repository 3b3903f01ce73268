# Unit tests of controller/store (migrations, tokens, enrollment, node states, revocation, audit).
railyard_test(test_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store.c
	LIBS ry_store Threads::Threads LABELS unit TIMEOUT 120)
# Online backup and restore through SQLite's backup API (controller/store/store_backup.c).
railyard_test(test_store_backup SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_backup.c
	LIBS ry_store LABELS unit TIMEOUT 60)
