# Thin wrapper over CMake/CTest. Quick start: `make demo`, `make demo-portal`, `make test`.
BUILD    ?= build
JOBS     ?= $(shell nproc 2>/dev/null || echo 2)
SANITIZE ?= OFF
CMAKE_ARGS ?=
CTEST_ARGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECS ?= 60
FUZZ_TARGETS ?=

.PHONY: all deps configure build test package demo demo-portal fuzz format format-check clean

all: build

deps:
	@deploy/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DRAILYARD_SANITIZE=$(SANITIZE) $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# CTest hides a skipped test's output; its SKIP line (the reason) is repeated at the end.
test: build
	@cd $(BUILD) && { ctest --output-on-failure -j$(JOBS) $(CTEST_ARGS); rc=$$?; \
		grep -h '^SKIP' Testing/Temporary/LastTest.log 2>/dev/null | sort -u; exit $$rc; }

# Debian packages of this build into $(BUILD)/ (cmake/package.cmake): railyard-controller,
# railyard-agent, railyard-bench, railyard-cli. Not from a sanitizer build.
package:
	@if [ "$(SANITIZE)" = "ON" ]; then \
		echo "make package: not from a sanitizer build (its programs are not what is shipped)" >&2; \
		exit 2; fi
	@$(MAKE) --no-print-directory build
	@cmake --build $(BUILD) --target package
	@ls -l $(BUILD)/railyard-*.deb

demo: build
	@deploy/demo.sh $(BUILD)

# The same demo, then the controller keeps serving the web portal (HTTP=HOST:PORT, default
# 127.0.0.1:8443) with its URL and login tokens printed, until Ctrl-C.
demo-portal: build
	@HTTP=$(HTTP) deploy/demo.sh $(BUILD) --portal

# libFuzzer targets (docs/fuzzing.md): a clang build with ASan+UBSan in $(FUZZ_BUILD), then each
# target for FUZZ_SECS seconds (FUZZ_TARGETS="fuzz_playbook fuzz_rest": only those); prints
# executions and findings, exits 1 on a finding.
fuzz: deps
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRAILYARD_FUZZ=ON $(CMAKE_ARGS) >/dev/null
	@cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz-targets
	@tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECS) $(FUZZ_TARGETS)

# Fixture sysroots hold headers as a node has them (data, not our code).
SOURCES = git ls-files '*.c' '*.h' '*.cc' ':!:tests/fixtures/sysroots/**'

format:
	@$(SOURCES) | xargs clang-format -i

format-check:
	@$(SOURCES) | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD)
