# Unit tests of controller/store (migrations, tokens, enrollment, node states, revocation, audit).
railyard_test(test_store SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store.c
	LIBS ry_store Threads::Threads LABELS unit TIMEOUT 120)
# Online backup and restore through SQLite's backup API (controller/store/store_backup.c).
railyard_test(test_store_backup SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_backup.c
	LIBS ry_store LABELS unit TIMEOUT 60)
# Maintenances (controller/store/store_maint.c): whole or nothing, one per cluster, each node
# moved once with its ledger row, a stop that skips the later batches.
railyard_test(test_store_maint SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_store_maint.c
	LIBS ry_store LABELS unit TIMEOUT 60)
find_program(VALGRIND valgrind)
if(VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_store_maint_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_store_maint>)
	set_tests_properties(test_store_maint_valgrind PROPERTIES LABELS "unit;valgrind" TIMEOUT 300)
endif()
