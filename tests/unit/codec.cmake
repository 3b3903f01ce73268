railyard_test(test_codec SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_codec.c
	LIBS ry_agent ry_rpc ry_proto ry_util LABELS unit)
# rpc_tls_no_session_tickets(): OpenSSL's configuration for this process (a child per case).
railyard_test(test_rpc_tls SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_rpc_tls.c
	LIBS ry_rpc PkgConfig::OPENSSL LABELS unit)
