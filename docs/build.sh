#!/usr/bin/env bash
# Builds the detpath book offline and checks every internal link and anchor.
#
#   bash docs/build.sh            # book in target/book/html; its index.html is the LAST line printed
#
# Sphinx + MyST from Debian (python3-sphinx, python3-myst-parser: deps/apt-docs.txt): no compile,
# and `-W --keep-going -n` turns every broken cross-reference, missing page or unknown anchor
# into an error. The book's sources stay in docs/book; a staging copy under target/book/src gets
# the generated reference pages (docs/gen_reference.py: from the clap definitions via
# `detpath generate man`, the binary's own key lists, a live /metrics scrape) and the root
# files the book includes (ARCHITECTURE.md, CHANGELOG.md, docs/classify.md, docs/dpdk.md).
#
# DETPATH_BIN names the detpath binary to read (default target/release/detpath, built if missing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${DETPATH_BOOK_OUT:-$root/target/book}"
bin="${DETPATH_BIN:-$root/target/release/detpath}"

# Debian's Sphinx runs under Debian's python3 (a pyenv python3 first on PATH lacks its modules).
py=/usr/bin/python3
[[ -x $py ]] || py=python3
missing=()
command -v sphinx-build >/dev/null || missing+=(python3-sphinx)
"$py" -c 'import myst_parser' 2>/dev/null || missing+=(python3-myst-parser)
command -v groff >/dev/null || missing+=(groff-base)
if ((${#missing[@]})); then
    echo "docs/build.sh: missing ${missing[*]}: apt-get install -y ${missing[*]} (or make deps: deps/apt-docs.txt)" >&2
    exit 3
fi
if [[ ! -x "$bin" ]]; then
    echo "docs/build.sh: building $bin (cargo build --release -p detpath-cli)" >&2
    (cd "$root" && cargo build --release -p detpath-cli >&2)
fi

rm -rf "$out/src" "$out/html" "$out/doctrees"
mkdir -p "$out/src"
cp -r "$root/docs/book/." "$out/src/"
# Files that live outside the book (others link to them by these paths) are copied in beside it.
mkdir -p "$out/src/included"
cp "$root/ARCHITECTURE.md" "$root/CHANGELOG.md" "$root/docs/classify.md" "$root/docs/dpdk.md" "$out/src/included/"
mkdir -p "$out/src/included/results"
cp "$root"/docs/results/*.png "$out/src/included/results/"
"$py" "$root/docs/gen_reference.py" "$bin" "$root" "$out/src"

sphinx-build -q -W --keep-going -n -b html -d "$out/doctrees" "$out/src" "$out/html" >&2
# Sphinx resolves page links and {ref}s; a Markdown link to `page.md#anchor` whose anchor does not
# exist is only a warning in some MyST versions, so the built pages' own anchors are checked too.
"$py" "$root/docs/check_links.py" "$out/html" >&2
echo "$out/html/index.html"
