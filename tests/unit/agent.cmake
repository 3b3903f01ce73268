# nodeagent: the outbox and the plan journals (the agent's durable state).
railyard_test(test_agent_state SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_agent_state.c
	LIBS ry_agent Threads::Threads LABELS unit)
