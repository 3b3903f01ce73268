# controller/portal: the built-in table of portal/ (names, types, the versioned prefix) and its
# routes served by the HTTP core (plain HTTP on 127.0.0.1, libcurl as the client).
railyard_test(test_portal_files SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_portal_files.c
	LIBS ry_portal ry_http PkgConfig::CURL LABELS "unit;portal")
