# GPU code without a GPU: the test double of libcuda.so.1 (tests/gpu/libcuda_double.c, built
# only here, never installed) loaded through the RAILYARD_SEAM_LIBCUDA seam; the cuda memory
# backend, GPUDirect registration choice and copy bandwidth on it, and the refusals without a
# driver or a GPU.
if(TARGET ry_bench AND NOT RAILYARD_WITH_CUDA STREQUAL "OFF")
	add_library(cuda-double SHARED ${CMAKE_SOURCE_DIR}/tests/gpu/libcuda_double.c)
	target_include_directories(cuda-double PRIVATE ${CMAKE_SOURCE_DIR})
	target_link_libraries(cuda-double PRIVATE Threads::Threads)
	set_target_properties(cuda-double PROPERTIES OUTPUT_NAME cuda-double
		LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/gpu)
	set(RAILYARD_CUDA_DOUBLE ${CMAKE_BINARY_DIR}/tests/gpu/libcuda-double.so
		CACHE INTERNAL "the libcuda test double")

	railyard_test(test_bench_cuda SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_bench_cuda.c
		LIBS ry_bench Threads::Threads m ${CMAKE_DL_LIBS} LABELS unit TIMEOUT 120)
	add_dependencies(test_bench_cuda cuda-double)
	set_property(TEST test_bench_cuda APPEND PROPERTY ENVIRONMENT
		"RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE}" "RAILYARD_CUDA_DOUBLE_LEAKCHECK=1")
	# The cuda backend and the GPU check under valgrind: every path frees what it took (the
	# double's own leak check covers what the "driver" handed out).
	find_program(VALGRIND valgrind)
	if(VALGRIND AND NOT RAILYARD_SANITIZE)
		foreach(t test_bench_cuda test_gpucheck)
			add_test(NAME ${t}_valgrind
				COMMAND ${VALGRIND} -q --error-exitcode=9 --leak-check=full
					--errors-for-leak-kinds=definite,indirect $<TARGET_FILE:${t}>)
			set_tests_properties(${t}_valgrind PROPERTIES LABELS "unit;valgrind" TIMEOUT 300
				ENVIRONMENT "RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR};RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE};RAILYARD_CUDA_DOUBLE_LEAKCHECK=1")
		endforeach()
	endif()
	add_test(NAME test_bench_cuda_nolib COMMAND test_bench_cuda nolib)
	set_tests_properties(test_bench_cuda_nolib PROPERTIES LABELS unit TIMEOUT 30
		ENVIRONMENT "RAILYARD_SEAM_LIBCUDA=${CMAKE_BINARY_DIR}/tests/gpu/no-such-libcuda.so.1")
	add_test(NAME test_bench_cuda_nogpu COMMAND test_bench_cuda nogpu)
	set_tests_properties(test_bench_cuda_nogpu PROPERTIES LABELS unit TIMEOUT 30
		ENVIRONMENT "RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE};RAILYARD_CUDA_DOUBLE_GPUS=0")

	# The agent's GPU orders (a GPU check as a RunBench, GPU memory refused) in test_benchjob.
	if(TEST test_benchjob)
		add_dependencies(test_benchjob cuda-double)
		set_property(TEST test_benchjob APPEND PROPERTY ENVIRONMENT
			"RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE}")
	endif()

	# tests/gpu/run.sh, the GPU machine's script, on the double here (nvidia-smi steps skip), and
	# for real where there is a GPU (label gpu; it skips saying why where there is none).
	railyard_script_test(test_gpu_run_double
		COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/run.sh --out ${CMAKE_BINARY_DIR}/gpu-run-double
			--port 19750 --quick
		LABELS integration TIMEOUT 120)
	set_property(TEST test_gpu_run_double APPEND PROPERTY ENVIRONMENT
		"RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE}"
		"RAILYARD_CUDA_DOUBLE_RATES=h2d=55.5,d2h=55.3,d2d=1959")
	# Its collectives step on the libnccl double (tests/integration/CMakeLists.txt builds it).
	if(RAILYARD_HAVE_MPI)
		set_property(TEST test_gpu_run_double APPEND PROPERTY ENVIRONMENT
			"RAILYARD_NCCL_DOUBLE=${CMAKE_BINARY_DIR}/tests/doubles/libnccl-double.so")
	endif()
	if(TARGET nvml_double)
		set_property(TEST test_gpu_run_double APPEND PROPERTY ENVIRONMENT
			"RAILYARD_GPU_RUN_NVML_DOUBLE=$<TARGET_FILE:nvml_double>")
	endif()
	railyard_script_test(gpu_run
		COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu/run.sh --out ${CMAKE_BINARY_DIR}/gpu-run --port 19800
		LABELS gpu TIMEOUT 600)

	# The GPU check's judgement on fixture facts, and the check on the double.
	railyard_test(test_gpucheck SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_gpucheck.c
		LIBS ry_agent m ${CMAKE_DL_LIBS} LABELS unit TIMEOUT 60)
	add_dependencies(test_gpucheck cuda-double)
	set_property(TEST test_gpucheck APPEND PROPERTY ENVIRONMENT
		"RAILYARD_SEAM_LIBCUDA=${RAILYARD_CUDA_DOUBLE}" "RAILYARD_CUDA_DOUBLE_LEAKCHECK=1")
endif()

# A campaign's GPU parts: gpu tests (rounds, orders, summary, verdict), GPU <-> rail pairing.
railyard_test(test_campaign_plan SOURCES ${CMAKE_SOURCE_DIR}/tests/unit/test_campaign_plan.c
	LIBS ry_controller LABELS unit TIMEOUT 60)

# A campaign with a gpu test and a GPU-memory test over two agents on the double.
railyard_script_test(integration_campaign_gpu
	COMMAND ${CMAKE_SOURCE_DIR}/tests/integration/test_campaign_gpu.sh ${CMAKE_BINARY_DIR}
	LABELS integration TIMEOUT 300)
