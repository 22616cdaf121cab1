"""Shared fixtures: a kernel UDP endpoint pair on 127.0.0.1 (runs anywhere)
and a two-namespace testbed (root)."""

import os

import pytest

import detpath


@pytest.fixture
def pair():
    """Two udp endpoints on 127.0.0.1 with kernel-chosen ports."""
    a = detpath.open("udp://127.0.0.1:0")
    b = detpath.open("udp://127.0.0.1:0")
    yield a, b
    a.close()
    b.close()


def require(test, what, present, fix):
    """What a test needs from the machine: in CI (CI=true) its absence fails
    the test, naming the fix; elsewhere the test is skipped by name and the
    skip logged to target/skipped-tests.log, which `make test` lists (as
    detpath-testkit does for the Rust tests)."""
    if present:
        return
    line = f"{test}: needs {what} ({fix})"
    if os.environ.get("CI") in ("true", "1", "TRUE", "True"):
        pytest.fail(f"{line}: missing in CI, where the Makefile installs every tool and the tests run as root")
    log = os.environ.get("DETPATH_SKIP_LOG") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "target", "skipped-tests.log")
    try:
        with open(log, "a") as f:
            f.write(line + "\n")
    except OSError:
        pass
    print(f"SKIP {line}")
    pytest.skip(line)


@pytest.fixture
def testbed(request):
    """A testbed of uniquely named namespaces, removed after the test."""
    require(request.node.name, "root (namespaces and XDP)", os.geteuid() == 0, "run the tests as root, e.g. `sudo make test`")
    with detpath.Testbed(f"detpath-py{os.getpid()}-{request.node.name[-12:]}") as tb:
        yield tb
