# Thin wrapper over CMake. `make demo` and `make test` do all set-up.
BUILD      ?= build
BUILD_SAN  ?= build-sanitize
BUILD_FUZZ ?= build-fuzz
BUILD_REL  ?= build-release
BUILD_DBG  ?= build-debug
BUILD_A64  ?= build-aarch64
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps configure build demo test test-sanitize test-fuzz test-release test-debug test-aarch64 test-macos abi-check wheels clean

# Developer and CI builds treat warnings as errors; a plain `cmake` (users,
# packagers, add_subdirectory) does not (AUTD3_WERROR defaults to OFF).
WERROR ?= -DAUTD3_WERROR=ON
# SOEM v2 (GPL-3.0-only) for the SOEM link, fetched and built in the build
# folder (cmake/Autd3SoemFromCrate.cmake); a -DSOEM_ROOT= in CMAKE_ARGS wins.
# AUTD3_LINK_SOEM=ON: a SOEM that cannot be fetched or built is a configure
# error here, never a silently skipped link. The stages share one download.
SOEM_ARGS ?= -DAUTD3_SOEM_FROM_CRATE=ON -DAUTD3_LINK_SOEM=ON -DAUTD3_DOWNLOAD_DIR=$(CURDIR)/$(BUILD)/_downloads

all: build

deps:
	@scripts/setup-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python $(WERROR) $(SOEM_ARGS) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The benchmark through echocat against an emulated 2-device chain on a veth
# pair in a private network namespace (no real root needed).
demo: build
	tools/netns/autd3-netns --devices 2 --build $(BUILD) -- \
	  $(BUILD)/tools/perftest/autd3-perftest --link echocat --interface @MASTER@ --devices 2 --count 10000 --mode streaming
	tools/netns/autd3-netns --devices 2 --build $(BUILD) -- \
	  $(BUILD)/tools/perftest/autd3-perftest --link echocat --interface @MASTER@ --devices 2 --count 2000 --mode stop-and-wait

# The Rust test peers (label "peer": cargo builds of published crates) first,
# so that cargo never competes for the CPU with the tests that drive a bus.
test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L peer
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer (the SOEM
# link too: link_soem.c instrumented, SOEM itself built as in `make test`).
test-sanitize: deps
	cmake -S . -B $(BUILD_SAN) -DCMAKE_BUILD_TYPE=Debug -DAUTD3_SANITIZE=ON -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python -DAUTD3_WINE_TESTS=OFF $(WERROR) $(SOEM_ARGS) $(CMAKE_ARGS)
	cmake --build $(BUILD_SAN) -j $(JOBS)
	ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS) -L peer
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan-suppressions.txt UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir $(BUILD_SAN) --output-on-failure -j $(JOBS) -LE slow

# Everything built with clang and clang++ (-Werror clean there too; the C++
# header test needs the same toolchain), then a libFuzzer run
# of every fuzz target (fuzz/), library code instrumented.
test-fuzz: deps
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DAUTD3_FUZZ=ON -DAUTD3_LINK_ETHERCRAB=OFF -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python -DAUTD3_WINE_TESTS=OFF $(WERROR) $(CMAKE_ARGS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	ctest --test-dir $(BUILD_FUZZ) --output-on-failure -j $(JOBS) -R '^fuzz\.'

# The optimiser-dependent warnings (-Wmaybe-uninitialized at -O3, ...) differ
# per build type: build everything as Release and as Debug with GCC, -Werror,
# and run the unit tests (no network peers) there. EtherCrab (cargo) is left to
# `make test`, where it is built once.
UNIT_TESTS = '^(test_(proto|geometry|device|client|client_alloc|emulator_link|emulator_noalloc)|api)\.'
define build_type_test
	cmake -S . -B $(1) -DCMAKE_BUILD_TYPE=$(2) -DAUTD3_LINK_ETHERCRAB=OFF -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python -DAUTD3_WINE_TESTS=OFF $(WERROR) $(CMAKE_ARGS)
	cmake --build $(1) -j $(JOBS)
	ctest --test-dir $(1) --output-on-failure -j $(JOBS) -R $(UNIT_TESTS)
endef
test-release: deps
	$(call build_type_test,$(BUILD_REL),Release)
test-debug: deps
	$(call build_type_test,$(BUILD_DBG),Debug)

# Linux aarch64 (the appliance): cross-built with gcc-aarch64-linux-gnu, the
# whole suite run under qemu-user, every test in a private network namespace
# with a namespace-local binfmt_misc entry (scripts/qemu-aarch64-netns; no
# libpcap for the target, EtherCrab left to `make test`). docs/platforms.md.
test-aarch64: deps
	cmake -S . -B $(BUILD_A64) --toolchain cmake/toolchains/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAUTD3_LINK_ETHERCRAB=OFF $(SOEM_ARGS) -DAUTD3_PYTHON=$(CURDIR)/$(BUILD)/.venv/bin/python $(WERROR) $(CMAKE_ARGS)
	cmake --build $(BUILD_A64) -j $(JOBS)
	scripts/qemu-aarch64-netns ctest --test-dir $(BUILD_A64) --output-on-failure -j $(JOBS)

# Compare the shared library's ABI with the committed baseline abi/libautd3.abi
# (scripts/abi-check.sh --update writes a new one).
abi-check:
	scripts/abi-check.sh

# macOS arm64 and x86-64 cross-built with Zig's C compiler (PyPI ziglang in
# build/.venv-zig): built, never run. Then every Mach-O file must link with no
# undefined symbol beyond the system's (scripts/macho-check.sh).
# The SOEM link on the crate's macOS port (SOEM_ARGS: SOEM built for each).
MACOS_TARGETS ?= autd3_shared autd3_static autd3emu autd3-remote-server autd3-hostcheck autd3-perftest autd3-cli focus focus_cpp \
                 autd3_twincat_emu autd3-twincat-emu \
                 autd3_link_soem_shared
test-macos:
	@scripts/setup-deps.sh
	for a in aarch64 x86_64; do \
	  cmake -S . -B build-macos-$$a --toolchain cmake/toolchains/$$a-macos-zig.cmake -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF $(WERROR) $(SOEM_ARGS) $(CMAKE_ARGS) && \
	  cmake --build build-macos-$$a -j $(JOBS) --target $(MACOS_TARGETS) && \
	  scripts/macho-check.sh build-macos-$$a || exit 1; \
	done

# The Python binding's platform wheels into dist/python (scripts/python-wheels.sh): Linux x86-64
# and aarch64 (manylinux, auditwheel), Windows x64 (MinGW), macOS arm64 and x86-64 (Zig). The
# Linux ones are also built and checked by the ctest python.wheel_manylinux of `make test`.
wheels: deps
	scripts/python-wheels.sh dist/python

clean:
	rm -rf $(BUILD) $(BUILD_SAN) $(BUILD_FUZZ) $(BUILD_REL) $(BUILD_DBG) $(BUILD_A64) build-abi build-wheels build-macos-aarch64 build-macos-x86_64
