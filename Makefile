# Sluice: build, test, demo.  `make test` is the test command.
#
#   make build   release binary at .build/release/sluice (Swift runtime and libstdc++ linked in; see below)
#   make test    deps, unit tests (debug build; the engine's once more as nobody), short fuzz runs,
#                release build, end-to-end suite (as root)
#   make e2e     only the end-to-end suite against $(SLUICE_BIN); E2E_ARGS go to pytest
#   make e2e-kernel  the end-to-end harness against plain kernel forwarding (no binary needed)
#   make demo    deps, release build, scripts/demo.sh (as root)
#   make bench   deps, release build, end-to-end benchmark: Sluice against kernel forwarding, the floor
#                modes and the peers wireguard-go and OpenVPN (as root, ~15 minutes; table on stdout,
#                JSON + SVG in bench-results/); BENCH_ARGS go to Benchmarks/e2e/bench.py
#   make bench-quick  the same in about three minutes (shorter tests, 2,000 idle flows)
#   make microbench   release build of Benchmarks/MicroBench and every suite (~1 minute, no root);
#                MICROBENCH_ARGS picks suites: records wire mux lwip
#   make fuzz    builds the libFuzzer targets (Fuzz/README.md) and fuzzes each for FUZZ_SECONDS (60)
#   make fuzz-check   the same targets, unoptimised, over their seeds plus FUZZ_CHECK_SECONDS (3) each; part of make test
#   make clean

SHELL := /bin/bash
# A swift already on PATH wins; otherwise the toolchain's usual place.
export PATH := $(PATH):/opt/swift/usr/bin
SWIFT ?= swift
SLUICE_BIN ?= .build/release/sluice
export SLUICE_BIN
E2E_ARGS ?=
BENCH_ARGS ?=
MICROBENCH_ARGS ?=
FUZZ_SECONDS ?= 60
FUZZ_CHECK_SECONDS ?= 3
# The benchmark makes namespaces and a TUN: root, through sudo when not already.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
BENCH = $(SUDO) env SLUICE_BIN=$(SLUICE_BIN) timeout -k 30 1800 python3 Benchmarks/e2e/bench.py

# The release binary links the Swift runtime and libstdc++ statically and packs its relative
# relocations (lld, -z pack-relative-relocs: DT_RELR, glibc >= 2.36). Most of a Sluice process's
# memory is shared-library pages the dynamic loader and the Swift runtime touch at start; linked in
# and with 5 KB of RELR instead of 630 KB of RELA, an idle `sluice up` takes 3.3 MiB less resident
# memory (README, "Memory"), for a binary of 18 MB instead of 6. Debug builds and `swift test` stay
# dynamic. swiftc's static-stdlib link line asks for -lstdc++; a directory holding only libstdc++.a,
# searched before gcc's own, makes that the static archive.
STATIC_CXX_DIR := $(CURDIR)/.build/static-libstdc++
# scripts/release-exports.map keeps Sluice's own symbols out of the dynamic symbol table (0.4 MiB less,
# Benchmarks/e2e/smaps.py).
# scripts/release-order.txt lays the functions a running `sluice up` executes side by side at the start of
# .text (Benchmarks/e2e/codeorder.py writes it): the kernel maps code 64 KiB around each page fault, so
# code spread over the binary keeps most of its 7 MB resident. Swift and C put each function in its own
# section only when asked (-function-sections), which the ordering needs; libswiftCore.a already does. A
# name the binary no longer has is ignored (--no-warn-symbol-ordering): a stale list costs layout only.
# (An existing .build keeps objects compiled without -function-sections: swift's incremental build does not
# see the flag; rm -rf .build once, CI's fresh clone is fine.)
RELEASE_FLAGS := --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs \
                 -Xlinker -L$(STATIC_CXX_DIR) -Xlinker --version-script=$(CURDIR)/scripts/release-exports.map \
                 -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
                 -Xlinker --symbol-ordering-file=$(CURDIR)/scripts/release-order.txt -Xlinker --no-warn-symbol-ordering
# Libraries the release binary must not load at start: each costs resident memory in every process.
UNWANTED_LIBS := Foundation|ICU|libswiftCore|libstdc\+\+|libnftables|libsystemd

.PHONY: all build deps unit test e2e e2e-kernel demo bench bench-quick microbench fuzz fuzz-check clean

all: build

build: $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT) build -c release --product sluice $(RELEASE_FLAGS)
	@if ldd .build/release/sluice | grep -E '$(UNWANTED_LIBS)'; then \
	    echo "make build: .build/release/sluice loads the libraries above at start; see RELEASE_FLAGS in the Makefile" >&2; exit 1; fi

deps:
	scripts/deps.sh

unit:
	$(SWIFT) build
	$(SWIFT) test
	SWIFT=$(SWIFT) scripts/unit-unprivileged.sh

test: deps
	$(MAKE) unit
	$(MAKE) fuzz-check
	$(MAKE) build
	$(MAKE) e2e

e2e:
	scripts/e2e.sh $(E2E_ARGS)

e2e-kernel:
	SLUICE_E2E_MODE=kernel scripts/e2e.sh $(E2E_ARGS)


demo: deps build
	scripts/demo.sh

bench: deps build
	$(BENCH) $(BENCH_ARGS)

bench-quick: deps build
	$(BENCH) --quick $(BENCH_ARGS)

# Same flags as `build`, so that both share .build/release instead of rebuilding it in turn, and
# the suites measure code linked as sluice is.
microbench: $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT) build -c release --product MicroBench $(RELEASE_FLAGS)
	.build/release/MicroBench $(MICROBENCH_ARGS)

fuzz:
	scripts/fuzz.sh run $(FUZZ_SECONDS)

fuzz-check:
	scripts/fuzz.sh check $(FUZZ_CHECK_SECONDS)

$(STATIC_CXX_DIR)/libstdc++.a:
	@mkdir -p $(STATIC_CXX_DIR)
	@a=$$(clang -print-file-name=libstdc++.a); [[ $$a == /* ]] \
	    || { echo "make: libstdc++.a not found — install libstdc++-12-dev (Debian) or your gcc's libstdc++ dev package" >&2; exit 1; }; \
	    ln -sf "$$a" $@

clean:
	rm -rf .build
	find Tests/E2E Benchmarks -name __pycache__ -type d -prune -exec rm -rf {} +
