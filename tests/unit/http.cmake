# controller/http over real sockets (HTTPS on 127.0.0.1 with a test CA, a unix socket),
# libcurl as the client; and the same under valgrind (every path frees what it took).
railyard_test(test_http SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_http.c
	LIBS ry_http ry_pki PkgConfig::CURL PkgConfig::OPENSSL Threads::Threads LABELS unit
	TIMEOUT 120)

find_program(VALGRIND valgrind)
if(VALGRIND AND NOT RAILYARD_SANITIZE)
	add_test(NAME test_http_valgrind
		COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
			--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:test_http>)
	# A TLS handshake under valgrind on two busy cores can pause past a 1 s idle timeout: 8 s there.
	set_tests_properties(test_http_valgrind PROPERTIES LABELS "unit;valgrind" TIMEOUT 300
		ENVIRONMENT "TEST_HTTP_TIMEOUT_S=8;RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
endif()
