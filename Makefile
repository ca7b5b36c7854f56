# Sluice: build, test, demo.  `make test` is the test command.
#
#   make build   release binary at .build/release/sluice
#   make test    deps, unit tests (debug build), release build, end-to-end suite (as root)
#   make e2e     only the end-to-end suite against $(SLUICE_BIN); E2E_ARGS go to pytest
#   make e2e-kernel  the end-to-end harness against plain kernel forwarding (no binary needed)
#   make demo    deps, release build, scripts/demo.sh (as root)
#   make bench   deps, release build, end-to-end benchmark: Sluice against kernel forwarding (as root;
#                table on stdout, JSON + SVG in bench-results/); BENCH_ARGS go to Benchmarks/e2e/bench.py
#   make bench-quick  the same in under two minutes (shorter tests, 2,000 idle flows)
#   make microbench   release build of Benchmarks/MicroBench and every suite (~1 minute, no root);
#                MICROBENCH_ARGS picks suites: records wire mux lwip
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
# The benchmark makes namespaces and a TUN: root, through sudo when not already.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
BENCH = $(SUDO) env SLUICE_BIN=$(SLUICE_BIN) timeout -k 30 1500 python3 Benchmarks/e2e/bench.py

.PHONY: all build deps unit test e2e e2e-kernel demo bench bench-quick microbench clean

all: build

build:
	$(SWIFT) build -c release --product sluice

deps:
	scripts/deps.sh

unit:
	$(SWIFT) build
	$(SWIFT) test

test: deps
	$(MAKE) unit
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

microbench:
	$(SWIFT) build -c release --product MicroBench
	.build/release/MicroBench $(MICROBENCH_ARGS)

clean:
	rm -rf .build
	find Tests/E2E Benchmarks -name __pycache__ -type d -prune -exec rm -rf {} +
