#!/usr/bin/env bash
# Builds the detpath wheel with maturin for the system python3, unpacks it
# into a scratch directory and runs the pytest suite against it (nothing is
# installed). Root runs the namespace tests too.
#   crates/python/run-tests.sh [pytest args...]
#   PYTHON=/usr/bin/python3 (default), DETPATH_BIN=path/to/detpath (the real bench run)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
target=${CARGO_TARGET_DIR:-$root/target}
if command -v maturin >/dev/null; then maturin=(maturin); else maturin=("$PYTHON" -m maturin); fi
rm -f "$target"/wheels/detpath-*.whl
(cd "$here" && "${maturin[@]}" build --release -i "$PYTHON" -o "$target/wheels")
wheel=$(ls "$target"/wheels/detpath-*.whl)
site="$target/python-test-site"
rm -rf "$site" && mkdir -p "$site"
"$PYTHON" -m zipfile -e "$wheel" "$site"
# From tests/, so the source tree's python/detpath (without its native part) is not imported instead.
cd "$here/python/tests"
PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 exec "$PYTHON" -m pytest -p no:cacheprovider -q -rs . "$@"
