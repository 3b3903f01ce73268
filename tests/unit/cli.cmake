# client/print.c, the railyard command line's human output, on its own: a bar's text fitted to
# a terminal's width (the ETA kept), a node's steps with skipped runs collapsed.
railyard_test(test_cli_print SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_cli_print.c
	${CMAKE_SOURCE_DIR}/client/print.c LIBS ry_httpc ry_util PkgConfig::JANSSON LABELS unit)
target_include_directories(test_cli_print PRIVATE ${CMAKE_SOURCE_DIR})
