# controller/api/api_streams.c: the event streams' budget per token, per peer and in all.
railyard_test(test_api_streams SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_api_streams.c
	LIBS ry_controller LABELS unit)
# controller: refusal throttling (enrollment per source, audit rows per node).
railyard_test(test_throttle SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_throttle.c
	LIBS ry_controller LABELS unit)
# controller/nodes.c: the facts deriver's output for a committed facts document, pinned to its
# version (docs/architecture.md, "Node facts in the store").
railyard_test(test_nodes_derive SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_nodes_derive.c
	LIBS ry_controller LABELS unit)
target_compile_definitions(test_nodes_derive PRIVATE
	FACTS_FIXTURE="${CMAKE_SOURCE_DIR}/tests/fixtures/facts/h200-ib.json")
# controller/server.c: the heartbeat interval stretched with the fleet (--max-heartbeat-rate).
railyard_test(test_heartbeat SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_heartbeat.c
	LIBS ry_controller LABELS unit)
# controller services (tokens and audit, health and backup, nodes, playbooks) called directly
# over a temporary store, as the REST API and the command line call them.
railyard_test(test_services SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_services.c
	LIBS ry_controller LABELS unit)
# controller/engine: failures reported through the owner's callback (ctl_engine_on_failure).
railyard_test(test_engine_fail SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_engine_fail.c
	LIBS ry_controller LABELS unit)
