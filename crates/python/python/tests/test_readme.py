"""The README's Python block, run as written: extracted from README.md (the
block after ``<!-- tested: python``), executed in namespace b of a testbed
(where its address 10.77.0.2 lives) from a directory holding the result
directory it loads."""

import os
import pathlib
import subprocess
import sys

import pytest

from test_results import HEADER, run, write_dir

README = pathlib.Path(__file__).resolve().parents[4] / "README.md"


def readme_block(name):
    text = README.read_text()
    at = text.index(f"<!-- tested: {name}")
    rest = text[at:]
    start = rest.index("```")
    start = rest.index("\n", start) + 1
    end = rest.index("\n```", start)
    return rest[start:end]


def test_readme_python_block_runs(testbed, tmp_path):
    code = readme_block("python")
    compile(code, "README.md", "exec")  # a syntax error names the README
    # The result directory the block loads, in the documented layout.
    write_dir(
        tmp_path / "results" / "20261122T120000Z",
        [run("udp-default", "udp", "udp-default.csv")],
        {"udp-default.csv": HEADER + "0,100,5000,5100,1100,7,ok\n"},
    )
    check = code + "\nassert got is None or len(got) == 3\nassert res.runs() == ['udp-default']\nprint('README block ran')\n"
    out = subprocess.run(
        ["ip", "netns", "exec", testbed.b["netns"], sys.executable, "-c", check],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, f"README's Python block failed:\n{out.stdout}\n{out.stderr}"
    assert "README block ran" in out.stdout
