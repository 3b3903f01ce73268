# nodeagent/facts: collectors over the fixture sysroots in tests/fixtures/sysroots.
if(TARGET ry_facts)
	railyard_test(test_facts SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_facts.c
		LIBS ry_facts Threads::Threads LABELS unit TIMEOUT 60)
endif()

# The GPU facts through NVML: a test double of libnvidia-ml.so.1 (tests/doubles/nvml_double.c,
# built only here, never installed) that the agent loads through its seam RAILYARD_NVML_LIBRARY,
# fed the real readings of an H200 (tests/fixtures/nvml/). facts_vs_smi runs the agent with it
# and compares its facts with that GPU's nvidia-smi -q -x (tests/gpu/facts-vs-smi.sh).
if(TARGET ry_facts)
	add_library(nvml_double MODULE ${CMAKE_SOURCE_DIR}/tests/doubles/nvml_double.c)
	target_include_directories(nvml_double PRIVATE ${CMAKE_SOURCE_DIR})
	target_link_libraries(nvml_double PRIVATE Threads::Threads PkgConfig::JANSSON)
	railyard_test(test_facts_nvml SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_facts_nvml.c
		LIBS ry_facts LABELS unit TIMEOUT 60 ARGS $<TARGET_FILE:nvml_double>)
	add_dependencies(test_facts_nvml nvml_double)
	# nodeagent/gpuwatch.c: the GPU watcher over the double replaying series of readings
	# (tests/fixtures/nvml/health/): ECC, row remaps, a lost GPU, NVLink, clocks events.
	railyard_test(test_gpuwatch SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_gpuwatch.c
		LIBS ry_agent LABELS unit TIMEOUT 60 ARGS $<TARGET_FILE:nvml_double>)
	add_dependencies(test_gpuwatch nvml_double)
	# nodeagent/health_check_cmd.c: `railyard-agent health-check` over the same double.
	railyard_test(test_health_check_cmd SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_health_check_cmd.c
		LIBS ry_agent LABELS unit TIMEOUT 60 ARGS $<TARGET_FILE:nvml_double>)
	add_dependencies(test_health_check_cmd nvml_double)
	railyard_script_test(facts_vs_smi
		COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/test-facts-vs-smi.sh ${CMAKE_BINARY_DIR}
			$<TARGET_FILE:nvml_double>
		LABELS unit TIMEOUT 60)
	# dlopen()/dlclose() of the double and every error path free what they took
	find_program(VALGRIND valgrind)
	if(VALGRIND AND NOT RAILYARD_SANITIZE)
		add_test(NAME test_facts_nvml_valgrind
			COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
				--errors-for-leak-kinds=definite,indirect
				$<TARGET_FILE:test_facts_nvml> $<TARGET_FILE:nvml_double>)
		set_tests_properties(test_facts_nvml_valgrind PROPERTIES LABELS "unit;valgrind"
			TIMEOUT 300 ENVIRONMENT
			"RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
		# health-check: the GPU watcher, the readiness checks, the playbook's health
		# section and the agent's side of it, every path freeing what it took
		add_test(NAME test_health_check_cmd_valgrind
			COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
				--errors-for-leak-kinds=definite,indirect
				$<TARGET_FILE:test_health_check_cmd> $<TARGET_FILE:nvml_double>)
		set_tests_properties(test_health_check_cmd_valgrind PROPERTIES LABELS "unit;valgrind"
			TIMEOUT 300 ENVIRONMENT
			"RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
		add_test(NAME test_gpuwatch_valgrind
			COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
				--errors-for-leak-kinds=definite,indirect
				$<TARGET_FILE:test_gpuwatch> $<TARGET_FILE:nvml_double>)
		set_tests_properties(test_gpuwatch_valgrind PROPERTIES LABELS "unit;valgrind"
			TIMEOUT 300 ENVIRONMENT
			"RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
	endif()
endif()
