#!/usr/bin/env python3
"""Writes the results tables of README.md and docs/book/results/*.md from the files under
docs/results, so no published figure is typed by hand.

A page marks each generated table; the prose around it is the page's own:

    <!-- results-table: KIND FILE [FILE...] [only=WORD,WORD] -->
    ...rows written here...
    <!-- end results-table -->

KIND says which figures to read (see TABLES below); every row names its file and the CPU model
that file recorded (its `Environment:` line, the `environment` object of its JSON, or of the
JSON of the same run beside a .txt; "not recorded" when there is none, which the test refuses:
such a file backs no figure). Commands that record no machine of their own (examples, tests,
the fuzz smoke run) are saved with docs/record_run.sh, which writes the `Environment:` line.
crates/cli/tests/docs_results.rs runs `gen_results.py --check` (exit 1 when a page differs from
what its files give) and checks every figure against its file.

Usage: gen_results.py [--check]
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs" / "book" / "results").glob("*.md"))


def machine(name):
    """The CPU model the file recorded, or "not recorded"."""
    path = RESULTS / name
    m = re.search(r"^Environment: .*?, CPU (.*?) \(\d+ CPUs\)", path.read_text(), re.M)
    if m:
        return m.group(1)
    js = path if path.suffix == ".json" else path.with_suffix(".json")
    if js.exists():
        def find(o):
            if isinstance(o, dict):
                env = o.get("environment")
                if isinstance(env, dict) and env.get("cpu_model"):
                    return env["cpu_model"]
                return next((r for r in map(find, o.values()) if r), None)
            if isinstance(o, list):
                return next((r for r in map(find, o[:3]) if r), None)
            return None
        found = find(json.loads(js.read_text()))
        if found:
            return found
    return "not recorded"


def src(name):
    return f"{machine(name)} | `docs/results/{name}`"


def section(lines, title):
    """The lines of a bench table section, from its title to the first blank line (header skipped)."""
    i = next(k for k, l in enumerate(lines) if l.startswith(title))
    out = []
    for l in lines[i + 3:]:
        if not l.strip():
            break
        out.append(l)
    return out


def per_run(name, only=None):
    """`detpath bench` table.txt: samples, median, p99, p99.99, max per run."""
    rows = []
    for l in section((RESULTS / name).read_text().splitlines(), "Latency per run"):
        label = re.match(r"(\S+ (?:D|D&S|T&S|T))\s", l).group(1)
        c = l[len(label):].split()
        if only and not any(label.split()[0] == w or label.endswith(" " + w) for w in only):
            continue
        rows.append([label, c[0], c[3], c[4], c[6], c[-3]])
    return ["run", "samples", "median µs", "p99 µs", "p99.99 µs", "max µs"], rows


def per_run_short(name, only=None):
    head, rows = per_run(name, only)
    return [head[0]] + head[2:], [[r[0]] + r[2:] for r in rows]


def tails(name, only=None):
    """The tail line of each run: slow rounds, threshold, first three causes, unexplained."""
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.match(r"\s+(.*?) \((D|D&S|T&S)\): of (\d+) rounds above (\S+) µs: (.*?)(?:; tracing|$)", l)
        if m:
            causes = m.group(5)
            un = re.search(r"(\d+) unexplained", causes)
            rows.append([f"{m.group(1)} {m.group(2)}", m.group(3), m.group(4), ", ".join(causes.split(", ")[:3]), un.group(1) if un else "0"])
    return ["run", "slow rounds", "threshold µs", "main causes", "unexplained"], rows


def rate_sweep(name, only=None):
    """One datapath at several rates: median, p99, p99.99, max, rounds lost."""
    lines = (RESULTS / name).read_text().splitlines()
    figs = []
    for l in lines[3:]:
        if not l.strip():
            break
        m = re.match(r"(.*?) (\d+ Mbit/s)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", l)
        figs.append([f"{m.group(1).strip()} {m.group(2)}", m.group(3), m.group(4), m.group(5), m.group(6)])
    lost = [l.split()[3] for l in section(lines, "Loss, server")]
    return ["datapath and rate", "median µs", "p99 µs", "p99.99 µs", "max µs", "rounds lost"], [f + [lo] for f, lo in zip(figs, lost)]


def pubsub_samples(name, only=None):
    """`pubsub bench --samples` table.txt: p50, p99, p99.99, max, PDV p99, lost (medians of repeats)."""
    rows = []
    for l in (RESULTS / name).read_text().splitlines()[1:]:
        if "latency 32B" not in l:
            continue
        pre, post = l.split("latency 32B 1kHz")
        v = re.findall(r"(\d+(?:\.\d+)?|n/a)(?: \[[^\]]*\])?", post)
        rows.append([pre.split()[2], v[1], v[2], v[3], v[4], v[5], v[6]])
    return ["datapath", "p50 µs", "p99 µs", "p99.99 µs", "max µs", "PDV p99 µs", "lost"], rows


def wait_sweep(name, only=None):
    rows = []
    for l in (RESULTS / name).read_text().splitlines()[1:]:
        if "latency 32B" not in l:
            continue
        pre, post = l.split("latency 32B 1kHz")
        v = re.findall(r"(\d+(?:\.\d+)?|n/a)(?: \[[^\]]*\])?", post)
        rows.append([pre.split()[-1], v[1], v[2], v[3], v[8]])
    return ["wait", "p50 µs", "p99 µs", "p99.99 µs", "cpu % of a core"], rows


def pubsub_matrix(name, only=None):
    """D / D&S / T&S latency rows beside ddsperf. ddsperf's p99 is its worst one-second p99:
    a column of its own, never set under detpath's exact p99. Two layouts: the table since
    2026-11-28 (p50, p99, worst-1s p99, p99.99, max) and the older one (mean, p99, p99.99, max)."""
    lines = (RESULTS / name).read_text().splitlines()
    old = "mean us" in lines[0]
    rows = []
    for l in lines[1:]:
        if "latency 32B" not in l:
            continue
        l = re.sub(r" \[[^\]]*\]", "", l)  # a run with --repeat: the median stays, its [min-max] goes
        conf = l.split()[0]
        system = l.split("latency 32B")[0][len(conf):].strip()
        system = re.sub(r"\s+(adaptive|busy|block|spin\S*|-)$", "", system)
        v = l.split("latency 32B 1kHz")[1].split()
        if old:
            centre, p99, mx = v[0], v[1], v[3]
        else:
            centre, p99, mx = v[1], (v[3] if system == "ddsperf" else v[2]), v[5]
        exact, worst = ("-", p99) if system == "ddsperf" else (p99, "-")
        rows.append([f"{conf} {system}", centre, exact, worst, mx])
    return ["config and system", "mean µs" if old else "p50 µs", "detpath p99 µs (exact)", "ddsperf worst 1 s p99 µs", "max µs"], rows


def sched_iat(name, only=None):
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.match(r"(afxdp|dpdk|udp)\s+(slots|sleep)\s+(\S+) / (\S+) / (\S+) / (\S+)\s+\S+ / \S+ / \S+ / \S+\s+\d+\s+\d+\s+(\d+)", l)
        if m:
            rows.append([f"{m.group(1)} {m.group(2)}", m.group(3), m.group(4), m.group(5), m.group(6), m.group(7)])
    return ["path and method", "IAT error p50 µs", "p99 µs", "p99.99 µs", "max µs", "violations"], rows


def classify_cells(name, only=None):
    """One dropping rule against the dropping no-op, 132 B frames, per encapsulation and CPU count."""
    cells = json.loads((RESULTS / name).read_text())
    cells = cells["cells"] if isinstance(cells, dict) else cells
    rows = []
    for enc in ["udp", "vxlan", "gtpu"]:
        for cpus in [1, 2]:
            pick = lambda prog: [c for c in cells if c["program"] == prog and c["encap"] == enc and c["size"] == 132 and c["cpus"] == cpus and c["rules"] == (0 if prog == "noop" else 1)]
            cls, noop = pick("classify"), pick("noop")
            if cls and noop:
                rows.append([f"{enc}, 132 B, {cpus} CPU, 1 rule", f"{noop[0]['pps'] / 1e6:.2f}", f"{cls[0]['pps'] / 1e6:.2f}", f"{cls[0]['ratio_to_noop']:.3f}"])
    return ["cell", "no-op Mpps", "classifier Mpps", "ratio to the no-op"], rows


def pubsub_mixed(name, only=None):
    """`pubsub bench --workloads mixed` mixed.json: control RTT/2 while bulk ran, its one-way
    budget violations, bulk throughput, per arm (ddsperf's p99 is its worst one-second p99)."""
    doc = json.loads((RESULTS / name).read_text())
    load = doc.get("environment", {}).get("load") or ["?"]
    rows = []
    for r in doc["rows"]:
        c, b = r["control"], r["bulk"]
        lat = c["latency_us"]
        f = lambda v: "-" if v is None else f"{v:.1f}"
        exact, worst = ("-", f(lat["p99"])) if r["arm"] == "ddsperf" else (f(lat["p99"]), "-")
        over = "-" if c.get("budget_violations") is None else f"{c['budget_violations']} of {lat['count']}"
        rows.append([f"{r['datapath']} {r['arm']}", r["configuration"], f(lat["p50"]), exact, worst, f(lat["max"]), over,
                     f"{b['samples_per_s']:.0f}", f"{b['mbps']:.0f}", str(load[0])])
    return ["datapath and arm", "config", "control p50 µs", "detpath p99 µs (exact)", "ddsperf worst 1 s p99 µs", "max µs", "over 100 µs budget",
            "bulk samples/s", "bulk Mb/s", "load (1 min)"], rows



def pubsub_mixed_causes(name, only=None):
    """`pubsub bench --workloads mixed` mixed.json since session 21: per detpath arm, the pings whose
    delivered one-way latency (write to take) went over the budget, and the cause of each
    (sent_late, retransmission, reader_late, network: the instrument's half-the-excess rule)."""
    doc = json.loads((RESULTS / name).read_text())
    load = doc.get("environment", {}).get("load") or ["?"]
    rows = []
    for r in doc["rows"]:
        vc = r["control"].get("violation_causes")
        if not vc:
            continue
        causes = ", ".join(f"{k} {v}" for k, v in sorted(vc["causes"].items(), key=lambda kv: -kv[1]) if v)
        rows.append([f"{r['datapath']} {r['arm']}", r["configuration"], f"{vc['over']} of {vc['judged']}", causes or "-", str(vc["lost"]), str(load[0])])
    return ["datapath and arm", "config", "over 100 µs (delivered)", "causes", "lost", "load (1 min)"], rows

def rtt(name, only=None):
    """`cargo run --release -p detpath --example rtt` (saved by docs/record_run.sh): closed-loop
    echo round trips per datapath and payload size."""
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.match(r"(\w+)\s+(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(.*)$", l)
        if m:
            rows.append([f"{m.group(1)} {m.group(2)} B", m.group(3), m.group(4), m.group(5), m.group(6).strip()])
    return ["datapath and payload", "round trips/s", "median RTT µs", "p99 RTT µs", "obtained"], rows


def burst(name, only=None):
    """`cargo run --release -p detpath-pubsub --example burst_recovery` (saved by
    docs/record_run.sh): when round trips resume after a corrupted-RTPS burst at each pong."""
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.match(r"(\S.*?)\s{2,}(<= \S+ s|never \(in \d+ s\))\s+(\S+)\s+(\S+)$", l)
        if m:
            rows.append([m.group(1), m.group(2).replace("<=", "≤"), m.group(3), m.group(4)])
    return ["pong", "round trips resume", "data_lost", "refused as implausible"], rows


def ptp_slave(name, only=None):
    """The IEEE 1588 tests' output (`cargo test -p detpath-sched --test ptp4l --test ptp --
    --nocapture`, saved by docs/record_run.sh): each detpath slave's lock time and residual."""
    runs = {"udp": "detpath slave (udp, kernel stamps) of a ptp4l master",
            "afxdp": "detpath slave (afxdp, XDP stamps) of a ptp4l master",
            "slave": "detpath slave (udp) of a detpath master"}
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.search(r"\b(udp|afxdp|slave): (?:master .*?, )?lock Some\(([\d.]+)\) s, residual p50 Some\((\d+)\) "
                      r"p99 Some\((\d+)\) max Some\((\d+)\) ns, path delay (\d+) ns", l)
        if m:
            rows.append([runs[m.group(1)], f"{float(m.group(2)):.2f}", m.group(3), m.group(4), m.group(5), m.group(6)])
    return ["run", "lock s", "residual p50 ns", "p99 ns", "max ns", "path delay ns"], rows


def ptp_master(name, only=None):
    """The same file: ptp4l as the slave of a detpath master, its printed offset against the truth."""
    rows = []
    for l in (RESULTS / name).read_text().splitlines():
        m = re.search(r"ptp4l: (\d+) offsets, .*?p50 (\d+) ns, p99 (\d+) ns; its path delay p50 (\d+) ns", l)
        if m:
            rows.append(["ptp4l slave (hybrid_e2e 1) of a detpath afxdp master", m.group(1), m.group(2), m.group(3), m.group(4)])
    return ["run", "offsets printed", "error of its offset p50 ns", "p99 ns", "ptp4l's path delay p50 ns"], rows


def fuzz(name, only=None):
    """`make fuzz-smoke` (saved by docs/record_run.sh, libFuzzer's coverage lines left out): each
    target's runs, seconds and its last exec/s; a target that did not build or crashed has no row."""
    rows, target = [], None
    for l in (RESULTS / name).read_text().splitlines():
        m = re.match(r"\s+Running `\S*/release/(\w+) ", l)
        if m:
            target, rate = m.group(1), None
        m = re.match(r"#\d+\s+DONE .*exec/s: (\d+)", l)
        if m:
            rate = m.group(1)
        m = re.match(r"Done (\d+) runs in (\d+) second", l)
        if m and target:
            # libFuzzer prints exec/s 0 for a run under one second: no rate then.
            rows.append([target, m.group(1), m.group(2), rate if m.group(2) != "0" and rate else "-"])
            target = None
    return ["fuzz target", "runs", "seconds", "exec/s"], rows


def pubsub_scale_discovery(name, only=None):
    """`pubsub scale` summary.json: discovery time and memory per participant count and system
    (a FAILED row says why in the file; here it shows as "failed")."""
    doc = json.loads((RESULTS / name).read_text())
    load = doc.get("environment", {}).get("load") or ["?"]
    rows = []
    for r in doc["discovery"]:
        if only and not any(w in r["system"] for w in only):
            continue
        ok = r["discovery_ms"] is not None
        rows.append([r["system"], str(r["participants"]), f"{r['discovery_ms']:.1f}" if ok else "failed",
                     str(r['rss_total_kb']) if ok else "-", f"{r['rss_per_participant_kb']:.0f}" if ok else "-", str(load[0])])
    return ["system", "participants", "discovery ms", "RSS KiB (all)", "KiB per participant", "load (1 min)"], rows


def pubsub_scale_fanout(name, only=None):
    """`pubsub scale` summary.json: fan-out latency pooled over the readers, per reader count and
    system. detpath's is one way over every sample; ddsperf's is RTT/2 from its per-second lines, so
    its p99 is the worst second's, in a column of its own (never set beside an exact p99)."""
    doc = json.loads((RESULTS / name).read_text())
    load = doc.get("environment", {}).get("load") or ["?"]
    f = lambda v: "-" if v is None else f"{v:.1f}"
    rows = []
    for r in doc["fanout"]:
        if r["reader"] is not None or r["note"].startswith("FAILED") or (only and not any(w in r["system"] for w in only)):
            continue
        l = r["latency_us"]
        exact, worst = ("-", f(l["p99"])) if "ddsperf" in r["system"] else (f(l["p99"]), "-")
        rows.append([r["system"], str(r["readers"]), f(l["p50"]), exact, worst, f(l["p99_9"]), f(l["max"]), r["method"].split(" (")[0], str(load[0])])
    return ["system", "readers", "p50 µs", "detpath p99 µs (exact)", "ddsperf worst 1 s p99 µs", "detpath p99.9 µs (exact)", "max µs", "method", "load (1 min)"], rows


def pubsub_fastdds(name, only=None):
    """`pubsub bench --fastdds` table.txt, its "Against Fast DDS" section: per configuration and
    detpath datapath, mean and p99.9 latency (32 B, 1 kHz, reliable) and the 32 B rate, each beside
    Fast DDS's of the same run, with the ratio and whether issue 38's goal holds."""
    lines = (RESULTS / name).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Against Fast DDS"))
    triple = r"\s+(\S+)\s+(\S+)\s+(\S+) (met|not met)"
    rows = []
    for l in lines[start + 2:]:
        if not l.strip() or l.startswith("#"):
            break
        m = re.match(r"(\S+)\s+detpath (\S+)\s+\S+" + triple * 3 + r"\s*$", l)
        if not m:
            continue
        g = m.groups()
        cells = [f"{g[0]} {g[1]}"]
        for k in range(3):
            mine, theirs, ratio, verdict = g[2 + 4 * k: 6 + 4 * k]
            cells += [mine, theirs, f"{ratio} ({verdict})"]
        rows.append(cells)
    return ["config and datapath", "mean µs", "Fast DDS mean µs", "mean ratio (goal ≤ 0.1)", "p99.9 µs", "Fast DDS p99.9 µs",
            "p99.9 ratio (goal ≤ 0.05)", "32 B samples/s", "Fast DDS samples/s", "rate ratio (goal ≥ 3)"], rows

TABLES = {
    "per-run": per_run,
    "per-run-short": per_run_short,
    "tails": tails,
    "rate-sweep": rate_sweep,
    "pubsub-samples": pubsub_samples,
    "pubsub-matrix": pubsub_matrix,
    "wait-sweep": wait_sweep,
    "sched-iat": sched_iat,
    "classify-cells": classify_cells,
    "pubsub-mixed": pubsub_mixed,
    "pubsub-mixed-causes": pubsub_mixed_causes,
    "rtt": rtt,
    "burst": burst,
    "ptp-slave": ptp_slave,
    "ptp-master": ptp_master,
    "fuzz": fuzz,
    "pubsub-scale-discovery": pubsub_scale_discovery,
    "pubsub-scale-fanout": pubsub_scale_fanout,
    "pubsub-fastdds": pubsub_fastdds,
}


def table(spec):
    words = spec.split()
    kind, files = words[0], [w for w in words[1:] if not w.startswith("only=")]
    only = next((w[5:].split(",") for w in words[1:] if w.startswith("only=")), None)
    head, out = None, []
    for f in files:
        h, rows = TABLES[kind](f, only)
        head = head or h
        out += [f"| {' | '.join(r)} | {src(f)} |" for r in rows]
    if not out:
        sys.exit(f"results-table {spec}: no rows (the file's layout changed?)")
    return [f"| {' | '.join(head)} | machine | source |", "|" + "---|" * (len(head) + 2)] + out


MARK = re.compile(r"^<!-- results-table: (.*?) -->$")


def render(text):
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        out.append(lines[i])
        m = MARK.match(lines[i])
        if m:
            end = next((k for k in range(i + 1, len(lines)) if lines[k] == "<!-- end results-table -->"), None)
            if end is None:
                sys.exit(f"`{lines[i]}` has no `<!-- end results-table -->`")
            out += table(m.group(1))
            i = end
            out.append(lines[i])
        i += 1
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    stale = []
    for p in PAGES:
        old = p.read_text()
        new = render(old)
        if new != old:
            stale.append(p.relative_to(ROOT))
            if not check:
                p.write_text(new)
    if check and stale:
        print(f"results tables differ from their files: {', '.join(map(str, stale))}; run python3 docs/gen_results.py", file=sys.stderr)
        sys.exit(1)
    print(f"{'checked' if check else 'written'}: {len(PAGES)} pages" + (f", {len(stale)} updated" if stale and not check else ""))


if __name__ == "__main__":
    main()
