# nodeagent/enroll.c: the token of `enroll --token-file` (mode checked, first line, stdin).
railyard_test(test_agent_token SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_agent_token.c
	LIBS ry_agent LABELS unit)
# nodeagent: the outbox and the plan journals (the agent's durable state).
railyard_test(test_agent_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_agent_state.c
	LIBS ry_agent Threads::Threads LABELS unit)
# nodeagent: fabric port counters around benchmarks, and the benchmark job layer (loopback runs).
railyard_test(test_counters SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_counters.c
	LIBS ry_agent LABELS unit)
railyard_test(test_benchjob SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_benchjob.c
	LIBS ry_agent Threads::Threads LABELS unit)
# nodeagent/kmsg.c: the kernel log watcher's parser (Xid, mlx5, AER), limiter and reader.
railyard_test(test_kmsg SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_kmsg.c
	LIBS ry_agent LABELS unit)
# nodeagent/portwatch.c: fabric port error rates against thresholds, state and rate changes.
railyard_test(test_portwatch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_portwatch.c
	LIBS ry_agent LABELS unit)
# nodeagent/readiness.c: fabric manager, GPUDirect RDMA and GPUDirect Storage readiness checks on
# fixture sysroots (tests/fixtures/gds/), gdscheck as a fixture script.
railyard_test(test_readiness SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_readiness.c
	LIBS ry_agent LABELS unit TIMEOUT 60)
# A playbook's health section (common/playbook/playbook_health.c): its diagnostics, its JSON, the
# shipped playbooks', and the agent's side of it (nodeagent/health_config.c).
railyard_test(test_health_config SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_health_config.c
	LIBS ry_agent LABELS unit)
