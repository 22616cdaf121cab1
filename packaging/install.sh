#!/bin/bash
# `make install` and `make uninstall`:
#
#   packaging/install.sh install   --prefix P [--destdir D] [--python PY]
#   packaging/install.sh uninstall --prefix P [--destdir D]
#
# install copies what `make build` left in target/ (libdetpath.so/.a, the
# wheel) and the header and pkg-config file to D+P: P/lib, P/include,
# P/lib/pkgconfig, and the Python module into PY's directory for P
# (packaging/python-site.py: P/lib/python3.X/dist-packages for Debian's
# python3, the venv's own site directory when PY is a venv's interpreter).
# It writes nothing else, except the dynamic linker's cache when P/lib is one
# of ldconfig's directories (/usr/local/lib). Every file written and every
# directory created is recorded in P/share/detpath/install-manifest;
# uninstall removes exactly those (and the byte-code Python wrote beside the
# module's .py files), so the same PREFIX and DESTDIR undo one install.
#
# After installing, it prints the `export VAR=...` lines a user needs when P
# is not where python, pkg-config or the dynamic linker look.
set -euo pipefail

cd "$(dirname "$0")/.."
me="detpath ${1:-install}"
say() { echo "$me: $*"; }
die() { echo "$me: $*" >&2; exit 2; }

ACTION=${1:-}
[ "$ACTION" = install ] || [ "$ACTION" = uninstall ] || die "usage: $0 install|uninstall --prefix P [--destdir D] [--python PY]"
shift
PREFIX=/usr/local DESTDIR="" PYTHON=/usr/bin/python3
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) PREFIX=${2:?--prefix needs a directory}; shift 2 ;;
        --destdir) DESTDIR=${2-}; shift 2 ;;
        --python) PYTHON=${2:?--python needs an interpreter}; shift 2 ;;
        *) die "unknown argument $1" ;;
    esac
done

# Paths in the manifest are where the files live once DESTDIR is dropped,
# so P must be absolute; a relative DESTDIR is taken from the repository root.
case $PREFIX in /*) ;; *) die "PREFIX=$PREFIX is not an absolute path" ;; esac
case "/$PREFIX/" in */../*|*/./*) die "PREFIX=$PREFIX has . or .. in it: give the plain path" ;; esac
PREFIX=$(echo "$PREFIX" | sed -e 's|//*|/|g' -e 's|\(.\)/$|\1|')
if [ -n "$DESTDIR" ]; then
    case $DESTDIR in /*) ;; *) DESTDIR=$(pwd)/$DESTDIR ;; esac
    DESTDIR=${DESTDIR%/}
fi
[ "$PREFIX" != / ] || die "PREFIX=/ would scatter files over the root: give a directory such as /usr/local"
MANIFEST=$PREFIX/share/detpath/install-manifest

# Is DIR one the dynamic linker's cache covers (so ldconfig must run after a change there)?
ld_dir() { [ -z "$DESTDIR" ] && ldconfig -v -N -X 2>/dev/null | grep -q "^$1:"; }

if [ "$ACTION" = uninstall ]; then
    if [ ! -f "$DESTDIR$MANIFEST" ]; then
        say "nothing to remove: there is no $DESTDIR$MANIFEST (make install records one; give the PREFIX and DESTDIR it had)"
        # An install made before manifests (pip into the interpreter's site directory) is named, not guessed at.
        if [ -z "$DESTDIR" ] && origin=$(cd / && "$PYTHON" -I -c 'import importlib.util as u; s = u.find_spec("detpath"); print(s.origin if s else "")' 2>/dev/null) \
            && [ -n "$origin" ] && [[ $origin != /usr/lib/python3/dist-packages/* ]]; then
            say "$PYTHON imports detpath from $origin, which no manifest records: remove it with \`$PYTHON -m pip uninstall --break-system-packages detpath\`"
        fi
        exit 0
    fi
    files=() dirs=() n=0
    while IFS= read -r line; do
        n=$((n + 1))
        case $line in '#'*|'') continue ;; esac
        kind=${line%% *} path=${line#* }
        case $path in /*) ;; *) die "$DESTDIR$MANIFEST line $n: '$path' is not absolute: not removing anything" ;; esac
        case "$path/" in */../*|*/./*) die "$DESTDIR$MANIFEST line $n: '$path' has . or ..: not removing anything" ;; esac
        case $kind in
            file) files+=("$path") ;;
            dir) dirs+=("$path") ;;
            *) die "$DESTDIR$MANIFEST line $n: unknown kind '$kind': not removing anything" ;;
        esac
    done < "$DESTDIR$MANIFEST"
    declare -A ours=()
    for d in "${dirs[@]}"; do ours[$d]=1; done
    for f in "${files[@]}"; do
        rm -f "$DESTDIR$f"
        # Byte-code of our .py files (Python writes it on import, when it can).
        if [[ $f == *.py ]]; then
            cache=$(dirname "$f")/__pycache__
            base=$(basename "$f" .py)
            rm -f "$DESTDIR$cache/$base".*.pyc
            [ -z "${ours[$(dirname "$f")]:-}" ] || rmdir "$DESTDIR$cache" 2>/dev/null || true
        fi
    done
    kept=()
    for ((i = ${#dirs[@]} - 1; i >= 0; i--)); do
        d=${dirs[i]}
        [ -d "$DESTDIR$d" ] || continue
        rmdir "$DESTDIR$d" 2>/dev/null || kept+=("$DESTDIR$d")
    done
    lib_changed=false
    for f in "${files[@]}"; do [[ $f == "$PREFIX/lib/libdetpath.so" ]] && lib_changed=true; done
    if $lib_changed && ld_dir "$PREFIX/lib"; then ldconfig; fi
    say "removed ${#files[@]} files and the directories make install created under $DESTDIR$PREFIX"
    for d in "${kept[@]}"; do say "kept $d: it holds files make install did not write"; done
    exit 0
fi

# ---- install ----
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
REL=target/release
for f in $REL/libdetpath.so $REL/libdetpath.a crates/capi/include/detpath.h crates/capi/detpath.pc.in; do
    [ -f "$f" ] || die "$f is missing: run \`make build\` first"
done
WHEEL=$(ls -t target/wheels/detpath-"$VERSION"-*.whl 2>/dev/null | head -n1 || true)
[ -n "$WHEEL" ] || die "no target/wheels/detpath-$VERSION-*.whl: run \`make wheel\` first"
"$PYTHON" -c 'import sys' 2>/dev/null || die "PYTHON=$PYTHON does not run: give an interpreter (PYTHON=/usr/bin/python3, or a venv's bin/python)"
PYTHON_ABS=$(command -v "$PYTHON")
{ read -r PYKIND; read -r SITE; } < <("$PYTHON" packaging/python-site.py "$PREFIX") || die "$PYTHON packaging/python-site.py failed"
[ -n "$SITE" ] || die "$PYTHON named no site directory for $PREFIX"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
sed -e "s|@PREFIX@|$PREFIX|g" -e "s|@VERSION@|$VERSION|g" crates/capi/detpath.pc.in > "$STAGE"/detpath.pc
"$PYTHON" -m zipfile -e "$WHEEL" "$STAGE"/wheel/

# The plan: source, destination (without DESTDIR), mode.
src=() dst=() mode=()
plan() { src+=("$1"); dst+=("$2"); mode+=("$3"); }
plan $REL/libdetpath.so "$PREFIX/lib/libdetpath.so" 755
plan $REL/libdetpath.a "$PREFIX/lib/libdetpath.a" 644
plan crates/capi/include/detpath.h "$PREFIX/include/detpath.h" 644
plan "$STAGE"/detpath.pc "$PREFIX/lib/pkgconfig/detpath.pc" 644
while IFS= read -r f; do
    plan "$STAGE/wheel/$f" "$SITE/$f" 644
done < <(cd "$STAGE"/wheel && find . -type f | sed 's|^\./||' | sort)

# Never overwrite a file a Debian package owns (PREFIX=/usr with the detpath package installed).
if [ -z "$DESTDIR" ] && command -v dpkg-query >/dev/null; then
    owned=$(dpkg-query -S "${dst[@]}" 2>/dev/null || true)
    [ -z "$owned" ] || die "these files belong to Debian packages; choose another PREFIX (or remove the package):
$owned"
fi

# The previous install with this PREFIX and DESTDIR: its directories stay ours, its files no longer written are removed.
declare -A old_dir=() old_file=() new_file=()
old_dirs=()
if [ -f "$DESTDIR$MANIFEST" ]; then
    while read -r kind path; do
        case $kind in
            dir) old_dir[$path]=1; old_dirs+=("$path") ;;
            file) old_file[$path]=1 ;;
        esac
    done < "$DESTDIR$MANIFEST"
fi
if [ -e "$DESTDIR$SITE/detpath/__init__.py" ] && [ -z "${old_file[$SITE/detpath/__init__.py]:-}" ]; then
    say "warning: $DESTDIR$SITE/detpath holds a copy of detpath that make install did not record (pip?): its files are replaced; \`make uninstall\` removes only what this install writes"
fi

created=()
# mkdir_p DIR: makes DESTDIR+DIR and every missing parent, recording the ones it made.
mkdir_p() {
    local path="" part
    local -a parts
    IFS=/ read -ra parts <<< "${1#/}"
    [ -z "$DESTDIR" ] || mkdir -p "$DESTDIR"
    for part in "${parts[@]}"; do
        [ -n "$part" ] || continue
        path+="/$part"
        if [ ! -d "$DESTDIR$path" ]; then
            [ ! -e "$DESTDIR$path" ] || die "$DESTDIR$path exists and is not a directory"
            mkdir -m 755 "$DESTDIR$path"
            created+=("$path")
        fi
    done
}

for i in "${!src[@]}"; do
    mkdir_p "$(dirname "${dst[i]}")"
    install -m "${mode[i]}" "${src[i]}" "$DESTDIR${dst[i]}"
    new_file[${dst[i]}]=1
done
for f in "${!old_file[@]}"; do
    [ -n "${new_file[$f]:-}" ] || [ "$f" = "$MANIFEST" ] || rm -f "$DESTDIR$f"
done

mkdir_p "$(dirname "$MANIFEST")"
{
    echo "# detpath $VERSION: what \`make install\` wrote (PREFIX=$PREFIX${DESTDIR:+ DESTDIR=$DESTDIR} PYTHON=$PYTHON_ABS)."
    echo "# \`make uninstall\` with the same PREFIX and DESTDIR removes these files, then these directories when empty."
    for d in "${old_dirs[@]}"; do [ -d "$DESTDIR$d" ] && echo "dir $d"; done
    for d in "${created[@]}"; do [ -n "${old_dir[$d]:-}" ] || echo "dir $d"; done
    for f in "${dst[@]}"; do echo "file $f"; done
    echo "file $MANIFEST"
} > "$STAGE"/manifest
install -m 644 "$STAGE"/manifest "$DESTDIR$MANIFEST"

if ld_dir "$PREFIX/lib"; then ldconfig; fi
say "installed ${#dst[@]} files under $DESTDIR$PREFIX$([ "$PYKIND" = venv ] && echo " and ${DESTDIR}$SITE"), recorded in $DESTDIR$MANIFEST"
[ -z "$DESTDIR" ] || exit 0

# What a user needs to find what was installed, one export line each.
on_path=$(cd / && env -u PYTHONPATH "$PYTHON" -c 'import sys; print("\n".join(sys.path))')
pyenv=()
if ! grep -qxF "$SITE" <<< "$on_path"; then
    say "$SITE is not on $PYTHON_ABS's path; for \`import detpath\`:"
    echo "export PYTHONPATH=$SITE"
    pyenv=(PYTHONPATH="$SITE")
fi
origin=$(cd / && env -u PYTHONPATH "${pyenv[@]}" "$PYTHON" -c 'import importlib.util as u; s = u.find_spec("detpath"); print(s.origin if s else "")')
[ "$origin" = "$SITE/detpath/__init__.py" ] || say "warning: $PYTHON_ABS imports detpath from $origin, which comes before $SITE on its path"
pc_path=$(pkg-config --variable pc_path pkg-config 2>/dev/null || true)
if ! tr : '\n' <<< "$pc_path" | grep -qxF "$PREFIX/lib/pkgconfig"; then
    say "$PREFIX/lib/pkgconfig is not where pkg-config looks; for \`pkg-config detpath\`:"
    echo "export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig"
fi
if ! ld_dir "$PREFIX/lib"; then
    say "$PREFIX/lib is not where the dynamic linker looks; to run programs linked with -ldetpath (or link with -Wl,-rpath,$PREFIX/lib):"
    echo "export LD_LIBRARY_PATH=$PREFIX/lib"
fi
