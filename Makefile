# Thin wrapper over CMake. `make demo` and `make test` do all set-up.
BUILD      ?= build
BUILD_SAN  ?= build-sanitize
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build demo test test-sanitize test-fuzz clean

all: build

deps:
	@scripts/setup-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The benchmark through echocat against an emulated 2-device chain on a veth
# pair in a private network namespace (no real root needed).
demo: build
	tools/netns/autd3-netns --devices 2 --build $(BUILD) -- \
	  $(BUILD)/tools/perftest/autd3-perftest --link echocat --interface @MASTER@ --devices 2 --count 10000 --mode streaming
	tools/netns/autd3-netns --devices 2 --build $(BUILD) -- \
	  $(BUILD)/tools/perftest/autd3-perftest --link echocat --interface @MASTER@ --devices 2 --count 2000 --mode stop-and-wait

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
test-sanitize: deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DAUTD3_SANITIZE=ON -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS) -LE slow

# Everything built with clang (-Werror clean there too), then a libFuzzer run
# of every fuzz target (fuzz/), library code instrumented.
test-fuzz: deps
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DAUTD3_FUZZ=ON -DAUTD3_LINK_ETHERCRAB=OFF -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python $(CMAKE_ARGS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	ctest --test-dir $(BUILD_FUZZ) --output-on-failure -j $(JOBS) -R '^fuzz\.'

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ)
