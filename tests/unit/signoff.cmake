# controller/signoff: the HTML view of a sign-off report (pure), on the hand-written fixture
# report and on mutants of it; and the same under valgrind (every path frees what it took).
set(signoff_fixture ${CMAKE_SOURCE_DIR}/tests/fixtures/signoff/report.json)
railyard_test(test_signoff_html SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_signoff_html.c
	LIBS ry_signoff PkgConfig::JANSSON LABELS unit TIMEOUT 120 ARGS ${signoff_fixture})
target_compile_definitions(test_signoff_html PRIVATE SIGNOFF_FIXTURE="${signoff_fixture}")

# controller/signoff: the report's CPU cost from a verdict's medians, and its place in the HTML.
railyard_test(test_signoff_cpucost SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_signoff_cpucost.c
	LIBS ry_signoff PkgConfig::JANSSON LABELS unit)
target_compile_definitions(test_signoff_cpucost PRIVATE SIGNOFF_FIXTURE="${signoff_fixture}")

find_program(VALGRIND valgrind)
if(VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_signoff_html_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_signoff_html>
			${signoff_fixture})
	# Every 5th mutant: all of them take two minutes under valgrind.
	set_tests_properties(test_signoff_html_valgrind PROPERTIES LABELS "unit;valgrind"
		TIMEOUT 300 ENVIRONMENT "SIGNOFF_MUTANT_STRIDE=5")
endif()
# controller/signoff: snapshots from the fixture sysroots' facts, drift, the comparison with a
# baseline, canonical bytes (pure).
if(TARGET ry_facts)
	railyard_test(test_signoff SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_signoff.c
		LIBS ry_signoff ry_facts PkgConfig::JANSSON LABELS unit TIMEOUT 60)
endif()
# common/signoff: the offline verifier (both command lines) and the stock-OpenSSL recipe every
# surface shows, against a node-signed forgery.
railyard_test(test_signoff_verify SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_signoff_verify.c
	LIBS ry_soverify ry_pki PkgConfig::JANSSON PkgConfig::OPENSSL LABELS unit TIMEOUT 60)
