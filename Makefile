# detpath: two commands on a fresh Debian 12 machine, as root:
#   make run    install what is needed, build, run the main job on the built-in testbed
#   make test   install what is needed, build, run every test
SHELL := /bin/bash
CARGO ?= cargo
# Debian packages the build, the tests and the benchmarks need.
DEB_PACKAGES := clang llvm libbpf-dev libelf-dev zlib1g-dev pkg-config iproute2 ethtool \
	stress-ng sockperf libcap2-bin util-linux dpdk-dev libdpdk-dev linuxptp python3-pip
RUN_ARGS ?=

.PHONY: all deps build run test fuzz-smoke clean testbed-down

all: build

deps: .deps-stamp
.deps-stamp: Makefile
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first"; exit 1; }
	@touch $@

build: deps
	$(CARGO) build --release --workspace

run: build
	./target/release/detpath bench $(RUN_ARGS)

test: build
	$(CARGO) test --release --workspace --no-fail-fast 2>&1 | tee target/test.log; test $${PIPESTATUS[0]} -eq 0
	$(MAKE) fuzz-smoke

# A short run of every fuzz target (the long runs are done by hand: see README).
fuzz-smoke:
	@if [ -d fuzz ]; then $(CARGO) test --release --manifest-path fuzz/Cargo.toml 2>&1 | tail -3; fi

testbed-down:
	-./target/release/detpath testbed down

clean:
	$(CARGO) clean
	rm -f .deps-stamp
