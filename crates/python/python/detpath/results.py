"""Reading ``detpath bench`` result directories into pandas DataFrames.

A result directory (see crates/instrument/src/results.rs) holds ``summary.json``
(``{"format": "detpath-bench/1", "runs": [...]}``, one entry per run) and,
per run, a CSV of raw per-round records named by the run's
``records_file``::

    seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status

    res = detpath.results.load("results/20250131T142501Z")
    res.summary[["config.datapath", "configuration", "rtt.median_ns", "rtt.p99_ns"]]
    res.records.groupby("run").rtt_ns.quantile(0.99)

pandas is imported on first use, so ``import detpath`` works without it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ._detpath import ResultsError

#: The ``format`` tag this reader understands.
FORMAT = "detpath-bench/1"

#: The columns of a records CSV, in order.
RECORD_COLUMNS = [
    "seq",
    "client_send_ns",
    "server_recv_ns",
    "server_send_ns",
    "client_recv_ns",
    "send_lateness_ns",
    "status",
]

#: Statuses whose timestamps are valid samples (as in the Rust crate).
SAMPLE_STATUSES = ("ok", "reordered")


@dataclass
class Results:
    """One result directory: ``summary`` has one row per run (nested fields
    flattened with dots, e.g. ``rtt.p99_ns``, indexed by run name);
    ``records`` has one row per round of every run with a records file, a
    ``run`` column naming the run, and the derived ``rtt_ns`` and
    ``server_time_ns`` (missing where the round is not a sample)."""

    path: str
    summary: Any
    records: Any

    def runs(self) -> list[str]:
        """The run names, in the order they were saved."""
        return list(self.summary.index)


def _pandas():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the host
        raise ResultsError(
            "detpath.results needs pandas: install python3-pandas (Debian) or `pip install pandas`"
        ) from e
    return pandas


def _read_summary(path: str) -> list[dict]:
    summary = os.path.join(path, "summary.json")
    try:
        with open(summary, encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ResultsError(
            f"no summary.json in {path}: is it a `detpath bench` result directory (results/<timestamp>/)?"
        ) from None
    except (OSError, ValueError) as e:
        raise ResultsError(f"{summary}: cannot read it as JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise ResultsError(f"{summary}: format is {got!r}, this reader knows {FORMAT!r}")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in runs):
        raise ResultsError(f"{summary}: `runs` must be a list of runs, each with a `name`")
    return runs


def _read_records(pd, path: str, run: dict):
    name = run["records_file"]
    if os.path.isabs(name) or os.path.dirname(os.path.normpath(name)) not in ("", "."):
        raise ResultsError(f"run {run['name']}: records_file {name!r} is not a file name inside {path}")
    file = os.path.join(path, name)
    try:
        df = pd.read_csv(
            file,
            dtype={c: "Int64" for c in RECORD_COLUMNS if c != "status"} | {"status": "string"},
        )
    except FileNotFoundError:
        raise ResultsError(f"run {run['name']}: records file {file} is missing") from None
    except (ValueError, pd.errors.ParserError) as e:
        raise ResultsError(f"{file}: not a detpath records CSV: {e}") from None
    if list(df.columns) != RECORD_COLUMNS:
        raise ResultsError(f"{file}: columns are {list(df.columns)}, expected {RECORD_COLUMNS}")
    df.insert(0, "run", run["name"])
    return df


def load(path: str | os.PathLike) -> Results:
    """Reads a result directory. Raises ``detpath.ResultsError`` naming the
    file and the problem when it is missing or malformed."""
    pd = _pandas()
    path = os.fspath(path)
    runs = _read_summary(path)
    summary = pd.json_normalize(runs, sep=".")
    if len(summary):
        summary = summary.set_index("name", drop=False)
        summary.index.name = None
    frames = [_read_records(pd, path, r) for r in runs if r.get("records_file")]
    if frames:
        records = pd.concat(frames, ignore_index=True)
    else:
        records = pd.DataFrame({c: pd.Series(dtype="Int64") for c in ["run", *RECORD_COLUMNS]})
        records = records.astype({"run": "string", "status": "string"})
    sample = records["status"].isin(SAMPLE_STATUSES)
    records["status"] = records["status"].astype("category")
    records["rtt_ns"] = (records["client_recv_ns"] - records["client_send_ns"]).where(sample)
    records["server_time_ns"] = (records["server_send_ns"] - records["server_recv_ns"]).where(sample)
    return Results(path=path, summary=summary, records=records)
