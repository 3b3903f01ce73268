# controller/api: the REST API's role x permission matrix and cluster scopes (pure), and that the
# store's API token roles are authz's roles.
railyard_test(test_auth SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_auth.c
	LIBS ry_api_authz ry_store LABELS unit TIMEOUT 60)
