# The two commands README.md opens with, and a few more. Every target installs what it needs.
SHELL := /bin/bash
.DEFAULT_GOAL := build

# ccache (installed by tools/install-deps.sh) keys on paths relative to the checkout, so a CI
# clone in another folder reuses the objects of an earlier build on the same machine.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true
export CCACHE_SLOPPINESS := pch_defines,time_macros,include_file_mtime,include_file_ctime

HARKD_ARGS ?=

.PHONY: deps build run cluster test test-release test-asan test-tsan test-fuzz test-long lint format clean

deps:
	@tools/install-deps.sh

# The product binaries only (harkd, hark, hark-bench); `make test` builds the tests.
build: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release --target bin

run: build
	@mkdir -p data
	exec build/bin/harkd --address 127.0.0.1:8090 --data-dir ./data $(HARKD_ARGS)

# etcd and three harkd on 127.0.0.11-13:8090, data in ./cluster-data (docs/cluster.md §A local
# cluster); tools/cluster.sh down|kill N|start N for the rest.
cluster: build
	@tools/cluster.sh up

# The whole suite: release (everything but fuzz), asan (unit, e2e), tsan (concurrency), fuzz.
test: deps
	@tools/test.sh all

test-release test-asan test-tsan test-fuzz: deps
	@tools/test.sh $(@:test-%=%)

# The release stage with its long modes: the random link-cut run for a minute instead of 2 s
# (HARK_FAULT_SECONDS, tests/cluster/link_faults_test.cc) and 30 replication fault cycles
# instead of 3 (HARK_FAULT_CYCLES, tests/cluster/replication_faults_test.cc).
test-long: deps
	@HARK_FAULT_SECONDS=$${HARK_FAULT_SECONDS:-60} HARK_FAULT_CYCLES=$${HARK_FAULT_CYCLES:-30} \
	  tools/test.sh release

lint: deps
	@cmake --preset release >/dev/null && cmake --build --preset release
	@ctest --test-dir build/release -L lint --output-on-failure

format: deps
	@git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' | xargs -r clang-format-16 -i

clean:
	rm -rf build
