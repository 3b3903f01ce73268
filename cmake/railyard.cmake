# Shared build helpers: compiler flags, dependencies, railyard_library() and railyard_test().
include(CheckCCompilerFlag)
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

add_compile_options(-Wall -Wextra -Wshadow -Wformat=2 -Wno-unused-parameter -fno-strict-aliasing
	-D_GNU_SOURCE "$<$<COMPILE_LANGUAGE:C>:-Wmissing-prototypes;-Wstrict-prototypes>")
if(RAILYARD_WERROR)
	add_compile_options(-Werror)
endif()
add_link_options(-Wl,--no-undefined)
if(RAILYARD_SANITIZE)
	add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
		-fno-omit-frame-pointer)
	add_link_options(-fsanitize=address,undefined)
endif()
# Fuzz build: coverage instrumentation for libFuzzer everywhere, sanitizers on; only the fuzz
# targets link libFuzzer itself (railyard_fuzz() in tests/fuzz/CMakeLists.txt).
if(RAILYARD_FUZZ)
	if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
		message(FATAL_ERROR "RAILYARD_FUZZ=ON needs clang (cmake -DCMAKE_C_COMPILER=clang)")
	endif()
	add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
		-fno-omit-frame-pointer)
	add_link_options(-fsanitize=address,undefined)
	# clang, unlike gcc, wants format(printf, N, 0) on every va_list wrapper.
	add_compile_options(-Wno-format-nonliteral)
endif()

pkg_check_modules(GRPC REQUIRED IMPORTED_TARGET grpc gpr)
# gRPC's locks are Abseil's; common/rpc/rpc_absl.cc sets one of Abseil's options (C++ only).
pkg_check_modules(ABSL_SYNC REQUIRED IMPORTED_TARGET absl_synchronization)
pkg_check_modules(PROTOBUFC REQUIRED IMPORTED_TARGET libprotobuf-c)
pkg_check_modules(SQLITE REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(OPENSSL REQUIRED IMPORTED_TARGET libssl libcrypto)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
pkg_check_modules(FYAML REQUIRED IMPORTED_TARGET libfyaml)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_program(PROTOC_C NAMES protoc-c protoc-gen-c REQUIRED)
find_program(PROTOC NAMES protoc)

# Verbs: AUTO builds it when libibverbs and librdmacm are installed.
set(RAILYARD_HAVE_VERBS OFF)
if(NOT RAILYARD_WITH_VERBS STREQUAL "OFF")
	pkg_check_modules(VERBS IMPORTED_TARGET libibverbs librdmacm)
	if(VERBS_FOUND)
		set(RAILYARD_HAVE_VERBS ON)
	elseif(RAILYARD_WITH_VERBS STREQUAL "ON")
		message(FATAL_ERROR "RAILYARD_WITH_VERBS=ON but libibverbs/librdmacm were not found")
	endif()
endif()

# CUDA: only headers are needed at build time; libcuda and NVML are dlopen()ed at run time.
set(RAILYARD_HAVE_CUDA OFF)
if(NOT RAILYARD_WITH_CUDA STREQUAL "OFF")
	find_path(CUDA_INCLUDE_DIR cuda.h HINTS /usr/local/cuda/include)
	if(CUDA_INCLUDE_DIR)
		set(RAILYARD_HAVE_CUDA ON)
	elseif(RAILYARD_WITH_CUDA STREQUAL "ON")
		message(FATAL_ERROR "RAILYARD_WITH_CUDA=ON but cuda.h was not found")
	endif()
endif()

# railyard_library(NAME SOURCES a.c b.c LIBS dep...): a static library whose headers are
# included as "module/file.h" relative to the source root.
function(railyard_library name)
	cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
	add_library(${name} STATIC ${A_SOURCES})
	target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
	target_link_libraries(${name} PUBLIC ${A_LIBS})
endfunction()

# railyard_test(NAME SOURCES ... LIBS ... LABELS unit [TIMEOUT s] [ARGS ...]): a test program
# registered with CTest; exit code 77 means skipped.
function(railyard_test name)
	cmake_parse_arguments(A "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
	if(NOT A_TIMEOUT)
		set(A_TIMEOUT 60)
	endif()
	add_executable(${name} ${A_SOURCES})
	target_link_libraries(${name} PRIVATE ${A_LIBS} PkgConfig::CMOCKA)
	add_test(NAME ${name} COMMAND ${name} ${A_ARGS})
	set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
		SKIP_RETURN_CODE 77
		ENVIRONMENT "RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# railyard_script_test(NAME COMMAND ... LABELS ... [TIMEOUT s]): a test that is a script.
function(railyard_script_test name)
	cmake_parse_arguments(A "" "TIMEOUT" "COMMAND;LABELS;DEPENDS" ${ARGN})
	if(NOT A_TIMEOUT)
		set(A_TIMEOUT 120)
	endif()
	add_test(NAME ${name} COMMAND ${A_COMMAND})
	set_tests_properties(${name} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
		SKIP_RETURN_CODE 77
		ENVIRONMENT "RAILYARD_SOURCE_DIR=${CMAKE_SOURCE_DIR};RAILYARD_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()
