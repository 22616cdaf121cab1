#!/usr/bin/env python3
"""Offline link check of a built HTML book: every relative href and src must name a
file of the build, and every #fragment an id (or name) in that file.

Usage: check_links.py HTML_DIR      (exit 1 and one line per broken link)
"""

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("id", "name"):
            if a.get(k):
                self.ids.add(a[k])
        for k in ("href", "src"):
            if a.get(k) is not None and not (tag == "link" and a.get("rel") == "search"):
                self.links.append(a[k])


def parse(path):
    p = Page()
    p.feed(path.read_text(errors="replace"))
    return p


def main():
    root = Path(sys.argv[1]).resolve()
    pages = {p.resolve(): parse(p) for p in root.rglob("*.html") if "_static" not in p.parts}
    broken = []
    for path, page in pages.items():
        for link in page.links:
            u = urlsplit(link)
            if u.scheme or link.startswith("//"):
                continue  # external: not followed (the build is offline); the book has none to check
            target = (path.parent / unquote(u.path)).resolve() if u.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{path.relative_to(root)}: {link}: no such file")
                continue
            if u.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(u.fragment) not in ids:
                    broken.append(f"{path.relative_to(root)}: {link}: no anchor #{u.fragment}")
    for b in broken:
        print(f"broken link: {b}")
    if broken:
        sys.exit(1)
    print(f"links: {sum(len(p.links) for p in pages.values())} checked in {len(pages)} pages, none broken")


if __name__ == "__main__":
    main()
