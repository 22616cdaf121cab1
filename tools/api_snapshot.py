#!/usr/bin/env python3
"""The public API of each library crate, as text, checked against api/<crate>.txt.

    python3 tools/api_snapshot.py check [CRATE ...]   differences -> a diff, exit 1
    python3 tools/api_snapshot.py write [CRATE ...]   (re)writes api/<crate>.txt
    python3 tools/api_snapshot.py show DOC_DIR        one crate's lines on stdout

Both read the HTML that `cargo doc --workspace --no-deps` left in
target/doc (run it first: `make api` and `make api-check` do), so the check
costs no second compilation. CRATE is a package name (detpath-wire); the
default is every workspace package with a Rust library target (cdylib and
staticlib-only crates are left out: their contract is detpath.h and the
Python module, not Rust items).

Why rustdoc's HTML: stable Rust has no rustdoc JSON (`cargo public-api`
needs nightly, which a fresh machine here cannot install), and a parser of
our own over the source (syn) would have to redo rustdoc's work: following
`pub use` and glob re-exports, `#[doc(hidden)]`, `pub(crate)`, cfg. rustdoc
already resolved all that into pages whose structure is regular: all.html
lists every public item, each item's page has its declaration
(`item-decl`) and one `code-header` per impl and method. What one line
holds:

    path: declaration            a struct (its pub fields), enum (variants),
                                 trait (its methods), fn, const, static,
                                 type alias, macro, derive
    path: impl ...               an inherent impl, a trait impl, Send/Sync
    path: pub fn ...             a method or associated const/type (a trait's
                                 items too, and `variant V(..)` per variant)
    path: mod                    a public module
    path: pub use ...            a re-export not inlined by rustdoc

so an added or removed item, a changed signature, a new pub field or
variant, a trait impl that appears or goes, a type that stops being Send
all change a line. Types in signatures are the names rustdoc prints (not
full paths); blanket impls (`impl<T> From<T> for T`) and the other auto
traits are left out as noise. rustdoc's layout can change with a Rust
release: after a toolchain upgrade `make api` may rewrite lines whose API
did not change (review the diff before committing it).
"""
import difflib
import html
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
API_DIR = os.path.join(ROOT, "api")
REGEN = "make api"

# Sections of a type's page whose impl headers are part of the contract.
IMPL_SECTIONS = ("implementations-list", "trait-implementations-list", "synthetic-implementations-list")
# A trait page's sections of associated items.
TRAIT_SECTIONS = (
    "required-associated-types", "provided-associated-types", "required-associated-consts",
    "provided-associated-consts", "required-methods", "provided-methods",
)
# Of the auto traits, the ones whose loss breaks callers in practice.
AUTO_TRAITS_KEPT = ("Send", "Sync")


def text(fragment):
    """rustdoc HTML -> one line of Rust: tags, tooltips and collapsers out, whitespace squeezed."""
    fragment = re.sub(r'<a href="#" class="tooltip"[^>]*>.*?</a>', "", fragment, flags=re.S)
    fragment = re.sub(r"<summary[^>]*>.*?</summary>", "", fragment, flags=re.S)
    fragment = re.sub(r"<[^>]+>", "", fragment)
    line = re.sub(r"\s+", " ", html.unescape(fragment)).strip()
    # rustdoc breaks long parameter lists one per line: `( a: u8, b: u8, )` -> `(a: u8, b: u8)`.
    return re.sub(r",? \)", ")", line.replace("( ", "("))


def section(page, div_id):
    """The HTML of `<div id=div_id>` up to the next h2 (sections are flat in rustdoc's pages)."""
    start = page.find(f'<div id="{div_id}"')
    if start < 0:
        return ""
    end = page.find("<h2 ", start)
    return page[start:] if end < 0 else page[start:end]


def item_lines(path, page):
    """Lines for one item page: its declaration, then its impls and their items."""
    lines = []
    decl = re.search(r'<pre class="rust item-decl"><code>(.*?)</code></pre>', page, re.S)
    if decl:
        lines.append(f"{path}: {text(decl.group(1))}")
    for sec in IMPL_SECTIONS:
        body = section(page, sec)
        for header in re.findall(r'<h3 class="code-header">(.*?)</h3>', body, re.S):
            header = text(header)
            if sec.startswith("synthetic") and not re.match(
                r"impl(<[^>]*>)? !?(%s) for " % "|".join(AUTO_TRAITS_KEPT), header
            ):
                continue
            lines.append(f"{path}: {header}")
        if sec == "implementations-list":
            # Inherent items only: a trait impl's methods are the trait's.
            for item in re.findall(r'<h4 class="code-header">(.*?)</h4>', body, re.S):
                lines.append(f"{path}: {text(item)}")
    # A trait's items and an enum's variants, one line each, so a diff names the one that changed.
    for h2 in TRAIT_SECTIONS:
        start = page.find(f'<h2 id="{h2}"')
        if start >= 0:
            end = page.find("<h2 ", start + 1)
            body = page[start:] if end < 0 else page[start:end]
            for item in re.findall(r'<h4 class="code-header">(.*?)</h4>', body, re.S):
                lines.append(f"{path}: {text(item)}")
    for variant in re.findall(r'<section id="variant\.[^"]+" class="variant">.*?<h3 class="code-header">(.*?)</h3>', page, re.S):
        lines.append(f"{path}: variant {text(variant)}")
    # A trait's implementations on types of other crates are listed on the trait's page only.
    for header in re.findall(r'<h3 class="code-header">(.*?)</h3>', section(page, "foreign-impls"), re.S):
        lines.append(f"{path}: {text(header)}")
    return lines


def module_lines(doc_dir, crate, rel, seen):
    """`mod` and re-export lines for the module page at rel (index.html), then its public submodules."""
    if rel in seen:
        return []
    seen.add(rel)
    page = open(os.path.join(doc_dir, rel), encoding="utf-8").read()
    parts = [crate] + [p for p in os.path.dirname(rel).split("/") if p]
    path = "::".join(parts)
    lines = [f"{path}: mod"]
    reexports = re.search(r'<dl class="item-table reexports">(.*?)</dl>', page, re.S)
    if reexports:
        for use in re.findall(r"<code>(.*?)</code>", reexports.group(1), re.S):
            lines.append(f"{path}: {text(use)}")
    modules = re.search(r'<h2 id="modules".*?<dl class="item-table">(.*?)</dl>', page, re.S)
    if modules:
        for href in re.findall(r'<a class="mod" href="([^"]+/index\.html)"', modules.group(1)):
            sub = os.path.normpath(os.path.join(os.path.dirname(rel), href))
            lines += module_lines(doc_dir, crate, sub, seen)
    return lines


def snapshot(doc_dir):
    """Every line of the crate documented in doc_dir (target/doc/<crate>), sorted.

    Starts from pages rustdoc rewrote in this run (all.html and the module
    tree from index.html), so a stale page left by an earlier run whose item
    is gone is never read."""
    crate = os.path.basename(os.path.normpath(doc_dir))
    index = os.path.join(doc_dir, "index.html")
    all_items = os.path.join(doc_dir, "all.html")
    if not os.path.exists(index) or not os.path.exists(all_items):
        raise SystemExit(f"api_snapshot: no rustdoc output in {doc_dir}: run `cargo doc --workspace --no-deps` first")
    lines = module_lines(doc_dir, crate, "index.html", set())
    listing = open(all_items, encoding="utf-8").read()
    for href in sorted(set(re.findall(r'<li><a href="([^"]+\.html)">', listing))):
        # dir/kind.Name.html -> crate::dir::Name
        parts = href[: -len(".html")].split("/")
        path = "::".join([crate] + parts[:-1] + [parts[-1].split(".", 1)[1]])
        page = open(os.path.join(doc_dir, href), encoding="utf-8").read()
        lines += item_lines(path, page)
    return sorted(set(lines))


def library_crates():
    """package name -> rustdoc's directory name, for every workspace package with a Rust library."""
    meta = json.loads(
        subprocess.check_output(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=ROOT)
    )
    crates = {}
    for pkg in meta["packages"]:
        for target in pkg["targets"]:
            if set(target["crate_types"]) & {"lib", "rlib", "proc-macro"}:
                crates[pkg["name"]] = target["name"].replace("-", "_")
    return crates


def doc_root():
    return os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "doc")


def check_is_library_page(doc_dir, package):
    """Two targets with one name (a lib and a bin) share target/doc/<name>; whichever cargo wrote
    last wins. Refuse to snapshot a binary's page as the library's API."""
    index = open(os.path.join(doc_dir, "index.html"), encoding="utf-8").read()
    src = re.search(r'<a class="src" href="[^"]*?/src/[^"]+/([a-z_]+)\.rs\.html', index)
    if src and src.group(1) == "main":
        raise SystemExit(
            f"api_snapshot: {doc_dir} holds a binary's documentation, not {package}'s library: "
            "give the binary `doc = false` in its Cargo.toml"
        )


def main(argv):
    if len(argv) >= 2 and argv[0] == "show":
        print("\n".join(snapshot(argv[1])))
        return 0
    if not argv or argv[0] not in ("check", "write"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, wanted = argv[0], argv[1:]
    crates = library_crates()
    unknown = [c for c in wanted if c not in crates]
    if unknown:
        print(f"api_snapshot: not a workspace library: {', '.join(unknown)}", file=sys.stderr)
        return 2
    os.makedirs(API_DIR, exist_ok=True)
    changed = []
    for package in wanted or sorted(crates):
        doc_dir = os.path.join(doc_root(), crates[package])
        if os.path.exists(os.path.join(doc_dir, "index.html")):
            check_is_library_page(doc_dir, package)
        lines = snapshot(doc_dir)
        body = "".join(line + "\n" for line in lines)
        file = os.path.join(API_DIR, f"{package}.txt")
        old = open(file, encoding="utf-8").read() if os.path.exists(file) else ""
        if mode == "write":
            if old != body:
                with open(file, "w", encoding="utf-8") as out:
                    out.write(body)
                print(f"api/{package}.txt: {len(lines)} lines (rewritten)")
        elif old != body:
            changed.append(package)
            rel = os.path.relpath(file, ROOT)
            sys.stdout.writelines(
                difflib.unified_diff(old.splitlines(True), body.splitlines(True), rel, f"{rel} (now)", n=0)
            )
    if not wanted:
        stale = sorted(f for f in os.listdir(API_DIR) if f.endswith(".txt") and f[:-4] not in crates)
        for f in stale:
            if mode == "write":
                os.remove(os.path.join(API_DIR, f))
                print(f"api/{f}: removed (no such library)")
            else:
                changed.append(f[:-4])
                print(f"api/{f}: no such library any more")
    if changed:
        print(
            f"\nThe public API of {', '.join(changed)} differs from its snapshot in api/ (diff above: "
            f"- snapshot, + now). If the change is meant, run `{REGEN}` and commit api/ with a line in "
            "CHANGELOG.md; if not, make the item private again.",
            file=sys.stderr,
        )
        return 1
    if mode == "check":
        print(f"api snapshot: the public API of {len(wanted or crates)} crate(s) matches api/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
