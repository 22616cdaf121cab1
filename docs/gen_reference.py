#!/usr/bin/env python3
"""Writes the book's generated reference pages into a staging copy of the book.

Nothing here is typed from memory: every page is read from the product itself.

- reference/commands.md: every (sub)command's man page, as `detpath generate man`
  renders it from the same clap definitions that parse the command line
  (groff formats it to text).
- reference/spec-keys.md: each datapath's keys, as the binary lists them when a
  spec names a key it does not take; each layer's keys, from the `KEYS` /
  `SPEC_KEYS` constants of the layer's source file.
- reference/metrics.md: the endpoint metrics, scraped from a live
  `detpath echo --metrics` on loopback; the classifier's, read from the
  `reg.register("detpath_classify_...")` calls of crates/classify/src/metrics.rs.
- reference/json.md: the key tree of each kind of result file under
  docs/results (what a script reading them can rely on).

Usage: gen_reference.py DETPATH_BIN REPO_ROOT STAGE_DIR
"""

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

DATAPATHS = ["udp", "xdppoll", "afxdp", "dpdk"]

# Each layer: (name, source file, constant holding its keys, what it does).
LAYERS = [
    ("pcap", "crates/detpath/src/layers/pcap.rs", None, "every datagram or frame sent and received, with receive stamps, to a pcap file"),
    ("fault", "crates/detpath/src/layers/fault.rs", "KEYS", "misbehaves on purpose (0-based send indices); also `fault://...?inner=<datapath>`"),
    ("rt", "crates/detpath/src/realtime.rs", "KEYS", "the opening thread becomes a real-time polling thread"),
    ("sched", "crates/sched/src/config.rs", "SPEC_KEYS", "the slot scheduler (opened by the CLI, the bindings and `detpath_open::open`)"),
    ("metrics", "crates/metrics/src/spec_key.rs", "KEYS", "serves the endpoint's counters at `http://ADDR/metrics`, one listener per address and process (a token file beyond loopback)"),
]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


def commands_page(bin_, out):
    with tempfile.TemporaryDirectory(prefix="detpath-man-") as d:
        r = run([bin_, "generate", "man", d])
        if r.returncode != 0:
            sys.exit(f"detpath generate man failed: {r.stderr}")
        pages = sorted(Path(d).glob("*.1"), key=lambda p: p.stem.split("-"))
        lines = [
            "# Commands",
            "",
            "Every command and subcommand, as its man page says it (`man detpath-bench` once the",
            "package is installed). Generated at build time by `docs/gen_reference.py` from",
            "`detpath generate man`, which renders the clap definitions that parse the command",
            "line: this page cannot drift from `--help`.",
            "",
        ]
        for p in pages:
            env = dict(os.environ, MANWIDTH="100", LC_ALL="C.UTF-8")
            g = subprocess.run(["groff", "-man", "-Tutf8", "-P-c", "-rLL=100n", str(p)], capture_output=True, env=env, timeout=60)
            if g.returncode != 0:
                sys.exit(f"groff failed on {p.name}: {g.stderr.decode(errors='replace')}")
            text = subprocess.run(["col", "-bx"], input=g.stdout, capture_output=True, timeout=60).stdout.decode("utf-8", "replace")
            text = "\n".join(l.rstrip() for l in text.splitlines()).strip("\n")
            name = p.stem.replace("-", " ")
            lines += [f"## {name}", "", "```text", text.replace("```", "'''"), "```", ""]
    (out / "reference" / "commands.md").write_text("\n".join(lines))
    return len(pages)


def datapath_keys(bin_):
    keys = {}
    for dp in DATAPATHS:
        r = run([bin_, "echo", f"{dp}://lo?port=9&detpath_docs_probe=1"])
        m = re.search(r"has no key `detpath_docs_probe`; it takes: (.*)", r.stderr + r.stdout)
        if not m:
            sys.exit(f"could not read the keys of the {dp} datapath from the binary: {r.stderr}")
        keys[dp] = [k.strip() for k in m.group(1).split(",")]
    return keys


def layer_keys(root, path, const, name):
    src = (root / path).read_text()
    if const is None:
        # pcap takes one key, named after the layer (`keys.get("pcap")`).
        found = sorted(set(re.findall(r'keys\.get\("([a-z_]+)"\)', src)))
        if not found:
            sys.exit(f"no keys found in {path}")
        return found
    m = re.search(rf"const {const}: &\[&str\] = &\[(.*?)\];", src, re.S)
    if not m:
        sys.exit(f"{path} has no `const {const}` (the {name} layer's keys moved: update docs/gen_reference.py)")
    return re.findall(r'"([a-z_]+)"', m.group(1))


def spec_keys_page(bin_, root, out):
    dk = datapath_keys(bin_)
    common = [k for k in dk["udp"] if all(k in v for v in dk.values())]
    lines = [
        "# Spec keys",
        "",
        "An endpoint spec is `<datapath>://<addr>:<port>` or `<datapath>://<iface>?port=N[&addr=A]`,",
        "then `&key=value` pairs. A key no datapath or layer takes is refused by name, with the",
        "list below. Generated at build time: each datapath's list is what the binary answers",
        "for a spec with an unknown key; each layer's is the constant in its source file.",
        "",
        f"Every datapath takes: {', '.join(f'`{k}`' for k in common)}.",
        "",
        "| datapath | its own keys |",
        "|---|---|",
    ]
    for dp, ks in dk.items():
        lines.append(f"| `{dp}` | {', '.join(f'`{k}`' for k in ks if k not in common)} |")
    lines += ["", "Layers wrap any endpoint, innermost first in this order; their keys go in the same spec.", "",
              "| layer | keys | what it does | source |", "|---|---|---|---|"]
    for name, path, const, what in LAYERS:
        ks = layer_keys(root, path, const, name)
        lines.append(f"| `{name}` | {', '.join(f'`{k}`' for k in ks)} | {what} | `{path}` |")
    lines += ["", "The CLI's `--metrics ADDR` adds the `metrics` layer to the endpoints a command opens.", ""]
    (out / "reference" / "spec-keys.md").write_text("\n".join(lines))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_endpoint_metrics(bin_):
    udp, http = free_port(), free_port()
    p = subprocess.Popen([bin_, "echo", f"udp://127.0.0.1:{udp}", "--metrics", f"127.0.0.1:{http}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=2) as r:
                    text = r.read().decode()
                # The listener can answer before the endpoint is open: wait for its families.
                if "# HELP detpath_endpoint_" in text:
                    return text
            except OSError:
                if p.poll() is not None:
                    sys.exit(f"detpath echo --metrics ended: {p.stderr.read()}")
                time.sleep(0.2)
        sys.exit("detpath echo --metrics did not serve the endpoint metrics on /metrics within 20 s")
    finally:
        p.terminate()
        p.wait(timeout=10)


def metric_rows(text):
    rows, types = [], {}
    for l in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", l)
        if m:
            types[m.group(1)] = m.group(2)
        m = re.match(r"# HELP (\S+) (.*)", l)
        if m:
            rows.append((m.group(1), m.group(2).rstrip(".")))
    return [(n, types.get(n, ""), h) for n, h in rows]


def metrics_page(bin_, root, out):
    live = metric_rows(scrape_endpoint_metrics(bin_))
    src = (root / "crates/classify/src/metrics.rs").read_text()
    cls = re.findall(r'register\(\s*"(detpath_classify_[a-z_]+)",\s*"([^"]*)"', src)
    cls += [(n, h) for n, h in re.findall(r'gauge\(\s*&mut reg,\s*"(detpath_classify_[a-z_]+)",\s*"([^"]*)"', src)]
    lines = [
        "# Metrics",
        "",
        "Prometheus text on `GET /metrics` of `detpath echo SPEC --metrics ADDR`, `detpath bench server",
        "--metrics ADDR` and `detpath classify serve` (beyond loopback only with a token).",
        "Generated at build time: the endpoint's list is scraped from a live `detpath echo --metrics`",
        "on loopback; the classifier's is read from crates/classify/src/metrics.rs.",
        "",
        "## Endpoint (`detpath echo`, `bench server`)",
        "",
        "| name | type | meaning |",
        "|---|---|---|",
    ]
    lines += [f"| `{n}` | {t} | {h} |" for n, t, h in live]
    lines += ["", "## Classifier (`detpath classify serve`)", "", "| name | meaning |", "|---|---|"]
    lines += [f"| `{n}` | {h} |" for n, h in cls]
    lines += ["", "Both HTTP listeners also count what their connection limit did:",
              "`<prefix>_http_connections_refused` and `<prefix>_http_connections_evicted`",
              "(prefix `detpath_classify` or `detpath_metrics`).", ""]
    (out / "reference" / "metrics.md").write_text("\n".join(lines))
    return len(live) + len(cls)


def shape(v, path, acc, depth=0):
    """Flattens a JSON value into (path, type) rows; lists show their first element."""
    t = type(v).__name__.replace("dict", "object").replace("list", "array").replace("str", "string").replace("NoneType", "null")
    t = {"int": "integer", "float": "number", "bool": "boolean"}.get(t, t)
    if path and path not in acc:
        acc[path] = t
    if depth > 5:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            shape(x, f"{path}.{k}" if path else k, acc, depth + 1)
    elif isinstance(v, list) and v:
        for x in v[:1]:
            shape(x, f"{path}[]", acc, depth + 1)


JSON_KINDS = [
    ("`detpath bench` summary.json (ping-pong runs)", "2026-11-26-matrix-100k-gaps-trace-cost.json"),
    ("`detpath pubsub bench --samples` summary.json", "2026-11-27-pubsub-samples-1M-idle.json"),
    ("`detpath pubsub bench --json` rows", "2026-11-27-pubsub-wait-sweep-idle.json"),
    ("`detpath sched bench --json`", "2026-11-23-sched-arrival-stamps-idle.json"),
    ("`detpath sched bench --sweep ... --json`", "2026-11-25-sched-sweeps-udp.json"),
    ("`detpath classify bench --json` (files saved before the `environment` record)", "2026-11-27-classify-bench-xeon.json"),
]


def json_page(root, out):
    lines = [
        "# JSON of the summaries",
        "",
        "The key tree of each kind of result file, read at build time from a file of that kind",
        "under `docs/results` (an array shows the keys of its first element as `[]`). A script",
        "can rely on these keys; numbers are in the unit their name says (`_ns`, `_us`, `_s`,",
        "`_pps`, `_pct`).",
        "",
    ]
    for title, name in JSON_KINDS:
        f = root / "docs" / "results" / name
        acc = {}
        shape(json.loads(f.read_text()), "", acc)
        lines += [f"## {title}", "", f"Read from `docs/results/{name}`.", "", "```text"]
        lines += [f"{p:<70} {t}" for p, t in list(acc.items())[:160]]
        if len(acc) > 160:
            lines.append(f"... and {len(acc) - 160} deeper keys")
        lines += ["```", ""]
    (out / "reference" / "json.md").write_text("\n".join(lines))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    bin_, root, out = sys.argv[1], Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()
    (out / "reference").mkdir(parents=True, exist_ok=True)
    n = commands_page(bin_, out)
    spec_keys_page(bin_, root, out)
    m = metrics_page(bin_, root, out)
    json_page(root, out)
    print(f"generated: {n} command pages, spec keys, {m} metrics, JSON key trees", file=sys.stderr)


if __name__ == "__main__":
    main()
