# detpath: two commands on a fresh Debian 12 machine, as root:
#   make run    install what is needed, build, run the main job on the built-in testbed
#   make test   install what is needed, build, run every test
SHELL := /bin/bash
CARGO ?= cargo
# Debian and PyPI packages, one list per component in deps/ (see deps/README.md).
DEB_PACKAGES := $(shell cat deps/apt-*.txt 2>/dev/null | sed 's/\#.*//')
PIP_PACKAGES := $(shell cat deps/pip-*.txt 2>/dev/null | sed 's/\#.*//')
RUN_ARGS ?=
# `make install`: the C library, header and pkg-config file under PREFIX, the Python module for PYTHON (see install:).
PREFIX ?= /usr/local
PYTHON ?= /usr/bin/python3
MATURIN ?= $(shell command -v maturin 2>/dev/null || echo "$(PYTHON) -m maturin")
DETPATH_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

.PHONY: all deps build wheel install uninstall docs deb run test doc-check api api-check fuzz-smoke clean testbed-down

all: build

deps: .deps-stamp
.deps-stamp: Makefile $(wildcard deps/*.txt)
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	fi
	@if [ -n "$(strip $(PIP_PACKAGES))" ]; then \
		$(PYTHON) -m pip install -q --break-system-packages $(PIP_PACKAGES) 2>/dev/null || $(PYTHON) -m pip install -q $(PIP_PACKAGES); \
	fi
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first"; exit 1; }
	@touch $@

build: deps
	$(CARGO) build --release --workspace
	$(MAKE) wheel

# The Python module (PyO3) as a wheel for the system python3.
wheel:
	rm -f target/wheels/detpath-*.whl
	cd crates/python && $(MATURIN) build --release -i $(PYTHON) -o ../../target/wheels

# `make install` copies what `make build` made (building only when it is
# missing: after changing the sources, `make build` first) to
# $(DESTDIR)$(PREFIX): lib/libdetpath.so/.a, include/detpath.h,
# lib/pkgconfig/detpath.pc, and the Python module into $(PYTHON)'s site
# directory for that prefix (lib/python3.X/dist-packages on Debian), or into
# the venv when PYTHON is a venv's interpreter. It records every file in
# $(PREFIX)/share/detpath/install-manifest and prints the `export` lines
# needed when the prefix is not on python's, pkg-config's or the linker's path
# (packaging/install.sh).
install:
	@test -f target/release/libdetpath.so -a -f target/release/libdetpath.a || $(MAKE) build
	@ls target/wheels/detpath-$(DETPATH_VERSION)-*.whl >/dev/null 2>&1 || $(MAKE) wheel
	packaging/install.sh install --prefix '$(PREFIX)' --destdir '$(DESTDIR)' --python '$(PYTHON)'

# Removes exactly what `make install` with the same PREFIX and DESTDIR recorded in its manifest.
uninstall:
	packaging/install.sh uninstall --prefix '$(PREFIX)' --destdir '$(DESTDIR)' --python '$(PYTHON)'

# The book: docs/build.sh builds it (and checks its links) and prints the path of its index.html last.
docs: deps
	bash docs/build.sh

# target/debian/detpath_<version>_<arch>.deb (packaging/debian/build-deb.sh):
# the binary, libdetpath, detpath.h/.pc, the Python module, man pages,
# completions, systemd units. Builds what is missing first (cargo is a no-op
# when the tree is up to date; the wheel is made only when there is none).
deb:
	$(CARGO) build --release --workspace
	ls target/wheels/detpath-$(DETPATH_VERSION)-*.whl >/dev/null 2>&1 || $(MAKE) wheel
	packaging/debian/build-deb.sh

run: build
	./target/release/detpath bench $(RUN_ARGS)

# Lints (clippy, warnings are errors), the crate docs and the public-API
# snapshots (api-check), every test, then the leftover check (no
# namespace, veth or XDP program of ours may survive the suite), then a short
# run of every fuzz target.
test: build
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	python3 tools/import_cycles.py
	$(MAKE) api-check
	python3 -m pytest -q -p no:cacheprovider tools/test_api_snapshot.py
	rm -f target/skipped-tests.log
	$(CARGO) test --release --workspace --no-fail-fast 2>&1 | tee target/test.log; test $${PIPESTATUS[0]} -eq 0
	crates/python/run-tests.sh 2>&1 | tee -a target/test.log; test $${PIPESTATUS[0]} -eq 0
	$(CARGO) test --release -p detpath-cli --test zz_leftovers -- --ignored 2>&1 | tee -a target/test.log; test $${PIPESTATUS[0]} -eq 0
	@# Tests that could not run here (no root, a tool missing) said so by name (detpath-testkit); in CI each is a failure instead.
	@n=$$(cat target/skipped-tests.log 2>/dev/null | wc -l); echo "skipped tests: $$n"; sed 's/^/  SKIPPED /' target/skipped-tests.log 2>/dev/null || true
	$(MAKE) fuzz-smoke

# The crate docs with rustdoc's warnings as errors (a broken intra-doc link, a
# `<word>` read as an unclosed HTML tag). --release reuses what `cargo build
# --release` and clippy compiled; a debug profile would build every
# dependency's build script and proc macro again.
DOC_CMD := RUSTDOCFLAGS="-D warnings" $(CARGO) doc --release --workspace --no-deps --keep-going
doc-check:
	@$(DOC_CMD) || { echo; echo "doc-check: cargo doc failed: fix what the errors above point at (rustdoc warnings are errors here), then run: make doc-check"; exit 1; }

# The public API of each library crate as text in api/<crate>.txt, read from
# the docs cargo doc wrote (tools/api_snapshot.py says what a line holds).
# `make api` rewrites the snapshots after a change that is meant (commit api/
# with a CHANGELOG.md line); `make api-check` fails with the diff when the API
# and api/ differ.
api: doc-check
	python3 tools/api_snapshot.py write
api-check: doc-check
	python3 tools/api_snapshot.py check

# A short run of every fuzz target (the long runs are done by hand: see README).
# cargo-fuzz is installed from crates.io when missing. It needs nightly
# features: the nightly toolchain when rustup has one, else stable with
# RUSTC_BOOTSTRAP=1 (stable ships the sanitizer runtimes too).
FUZZ_TARGETS := frame_parse probe_decode intent_parse rtps_parse arp_parse sync_msg sched_probe raweth_strip http_api
FUZZ_CARGO := $(shell rustup toolchain list 2>/dev/null | grep -q '^nightly' && echo 'cargo +nightly' || echo 'RUSTC_BOOTSTRAP=1 cargo')
fuzz-smoke:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	cd fuzz && for t in $(FUZZ_TARGETS); do mkdir -p corpus/$$t; \
		$(FUZZ_CARGO) fuzz run $$t corpus/$$t $$(test -d seeds/$$t && echo seeds/$$t) -- -runs=200000 -max_len=4096 || exit 1; done

testbed-down:
	-./target/release/detpath testbed down

clean:
	$(CARGO) clean
	rm -f .deps-stamp
