"""detpath.results.load: a real `detpath bench` run (when the detpath binary
and root are there) and hand-made directories in the documented layout,
including every malformed case."""

import json
import os
import shutil
import subprocess

import pytest

import detpath
from detpath import results
from conftest import require

HEADER = "seq,client_send_ns,server_recv_ns,server_send_ns,client_recv_ns,send_lateness_ns,status\n"


def summary_of(count, lo, hi, median):
    return {"count": count, "min_ns": lo, "median_ns": median, "max_ns": hi, "p99_ns": hi, "mean_ns": (lo + hi) / 2}


def run(name, datapath, records_file):
    return {
        "name": name,
        "config": {"datapath": datapath, "size": 64, "period_ns": 100000, "rounds": 3, "extra": {}},
        "configuration": "D",
        "rtt": summary_of(2, 1000, 3000, 1000),
        "loss": {"sent": 3, "ok": 2, "lost": 1},
        "records_file": records_file,
    }


def write_dir(path, runs, files):
    path.mkdir(parents=True, exist_ok=True)
    (path / "summary.json").write_text(json.dumps({"format": "detpath-bench/1", "runs": runs}))
    for name, text in files.items():
        (path / name).write_text(text)
    return path


@pytest.fixture
def two_runs(tmp_path):
    udp = HEADER + "0,100,5000,5100,1100,7,ok\n1,200,,,,9,lost\n2,300,6000,6050,3300,5,ok\n"
    afxdp = HEADER + "0,10,20,30,510,1,ok\n0,10,20,30,600,1,duplicate\n"
    return write_dir(
        tmp_path / "r",
        [run("udp-default", "udp", "udp-default.csv"), run("afxdp-default", "afxdp", "afxdp-default.csv"), run("sockperf-default", "sockperf", None)],
        {"udp-default.csv": udp, "afxdp-default.csv": afxdp},
    )


def test_summary_and_records(two_runs):
    res = results.load(two_runs)
    assert res.runs() == ["udp-default", "afxdp-default", "sockperf-default"]
    s = res.summary
    assert s.loc["udp-default", "config.datapath"] == "udp"
    assert s.loc["afxdp-default", "rtt.median_ns"] == 1000
    assert s.loc["udp-default", "loss.lost"] == 1
    r = res.records
    assert list(r.columns[:8]) == ["run"] + results.RECORD_COLUMNS
    assert len(r) == 5
    udp = r[r.run == "udp-default"]
    assert list(udp.rtt_ns.astype("float")) [0] == 1000
    assert udp.rtt_ns.isna().tolist() == [False, True, False]
    assert udp.server_time_ns.dropna().tolist() == [100, 50]
    assert udp.client_recv_ns.isna().tolist() == [False, True, False], "empty fields are missing times"
    dup = r[(r.run == "afxdp-default") & (r.status == "duplicate")]
    assert dup.rtt_ns.isna().all(), "a duplicate is not a sample"
    assert str(r.status.dtype) == "category"


def test_a_directory_without_records(tmp_path):
    d = write_dir(tmp_path / "s", [run("sockperf-default", "sockperf", None)], {})
    res = results.load(d)
    assert len(res.summary) == 1 and len(res.records) == 0
    assert "rtt_ns" in res.records.columns


@pytest.mark.parametrize(
    "case,match",
    [
        ("no summary", "no summary.json"),
        ("not json", "cannot read it as JSON"),
        ("wrong format", "format is 'other/9'"),
        ("runs not a list", "must be a list"),
        ("missing csv", "is missing"),
        ("wrong columns", "columns are"),
        ("not numbers", "not a detpath records CSV"),
        ("escaping path", "not a file name inside"),
    ],
)
def test_malformed_directories_raise_results_error(tmp_path, case, match):
    d = tmp_path / "bad"
    d.mkdir()
    doc = {"format": "detpath-bench/1", "runs": [run("udp-default", "udp", "udp-default.csv")]}
    csv = HEADER + "0,1,2,3,4,5,ok\n"
    if case == "not json":
        (d / "summary.json").write_text("{ not json")
    elif case != "no summary":
        if case == "wrong format":
            doc["format"] = "other/9"
        if case == "runs not a list":
            doc["runs"] = {"udp": 1}
        if case == "escaping path":
            doc["runs"][0]["records_file"] = "../elsewhere.csv"
        (d / "summary.json").write_text(json.dumps(doc))
        if case == "wrong columns":
            csv = "a,b\n1,2\n"
        if case == "not numbers":
            csv = HEADER + "0,one,2,3,4,5,ok\n"
        if case != "missing csv":
            (d / "udp-default.csv").write_text(csv)
    with pytest.raises(detpath.ResultsError, match=match):
        results.load(d)


def detpath_binary():
    env = os.environ.get("DETPATH_BIN")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "..", "..", "target", "release", "detpath")
    return built if os.path.exists(built) else shutil.which("detpath")


def test_a_real_bench_run(tmp_path):
    exe = detpath_binary()
    require("test_a_real_bench_run", "the detpath binary", bool(exe), "set DETPATH_BIN or build the CLI (make build)")
    require("test_a_real_bench_run", "root (the testbed)", os.geteuid() == 0, "run the tests as root, e.g. `sudo make test`")
    out = tmp_path / "results"
    cmd = [exe, "bench", "--datapath", "udp", "--rounds", "400", "--warmup", "20", "--period", "200us",
           "--testbed", f"detpath-pyres{os.getpid()}", "--out", str(out), "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), f"detpath bench failed: {done.stderr}"  # 1: some rounds lost (a measurement)
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    res = results.load(run_dir)
    assert len(res.summary) >= 1
    name = res.runs()[0]
    row = res.summary.loc[name]
    recs = res.records[res.records.run == name]
    assert row["config.datapath"] == "udp"
    assert row["config.rounds"] == 400
    samples = recs.rtt_ns.dropna()
    assert len(samples) == row["rtt.count"], "the records give the summary's sample count"
    assert samples.min() == row["rtt.min_ns"] and samples.max() == row["rtt.max_ns"]
    assert (recs.status != "duplicate").sum() == row["loss.sent"]
