#!/usr/bin/env python3
"""Import circles among a crate's modules.

    python3 tools/import_cycles.py [CRATE_DIR ...]     (default: every crates/*)

For each crate, every module (a file under src/) is a node and every path it
names into another module of the same crate (`crate::a::b`, `use
crate::{a, b::c}`, `super::x`) an edge; a module and its own ancestors or
descendants are not compared (a parent declares its children; a child may
use its parent's private helpers). Prints each strongly connected set of
modules (a circle: each reaches every other) and exits 1 when there is one.
Unit-test modules (`#[cfg(test)] mod tests`) and comments are left out. It
reads text, as the compiler's own resolver would be overkill for a check:
a path built by a macro is not seen.
"""
import os
import re
import sys


def modules(src):
    """module path ('a::b') -> file, for every .rs file under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                parts = os.path.relpath(os.path.join(root, f), src)[:-3].split("/")
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                mods["::".join(parts)] = os.path.join(root, f)
    return mods


def code(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]\nmod tests")
    text = text if cut < 0 else text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def group_items(group):
    """The top-level items of a `{a, b::{c, d}, e}` use group."""
    depth, cur, items = 0, "", []
    for ch in group:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    return [re.sub(r"\s", "", i) for i in items + [cur]]


def related(a, b):
    return a == b or a.startswith(b + "::") or b.startswith(a + "::") or a == "" or b == ""


def edges(mods):
    g = {m: set() for m in mods}
    for m, path in mods.items():
        text = code(path)
        parent = m.rsplit("::", 1)[0] if "::" in m else ""
        targets = [("", r) for r in re.findall(r"\bcrate::([a-z_0-9]+(?:::[a-z_0-9]+)*)", text)]
        targets += [(parent, r) for r in re.findall(r"\bsuper::([a-z_0-9]+(?:::[a-z_0-9]+)*)", text)]
        for base, grp in [("", g_) for g_ in re.findall(r"\bcrate::\{([^;]*)\}", text)] + [(parent, g_) for g_ in re.findall(r"\bsuper::\{([^;]*)\}", text)]:
            targets += [(base, i) for i in group_items(grp) if re.match(r"[a-z_]", i)]
        for base, ref in targets:
            parts = [p for p in re.split(r"::", ref) if p]
            full = ([base] if base else []) + parts
            for k in range(len(full), 0, -1):
                t = "::".join(full[:k])
                if t in mods:
                    if not related(t, m):
                        g[m].add(t)
                    break
    return g


def circles(g):
    """Tarjan's strongly connected components of size > 1."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main(args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    crates = args or sorted(os.path.join(root, "crates", c) for c in os.listdir(os.path.join(root, "crates")))
    found = 0
    for crate in crates:
        src = os.path.join(crate, "src")
        if not os.path.isdir(src):
            continue
        g = edges(modules(src))
        for comp in circles(g):
            found += 1
            links = [f"{a} -> {b}" for a in comp for b in sorted(g[a]) if b in comp]
            print(f"{os.path.basename(crate)}: circle among {', '.join(comp)} ({'; '.join(links)})")
    if found == 0:
        print(f"no import circle in {len(crates)} crates")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
