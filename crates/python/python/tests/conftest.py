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


@pytest.fixture
def testbed(request):
    """A testbed of uniquely named namespaces, removed after the test."""
    if os.geteuid() != 0:
        print(f"SKIP {request.node.name}: namespaces and XDP need root")
        pytest.skip("namespaces and XDP need root")
    with detpath.Testbed(f"detpath-py{os.getpid()}-{request.node.name[-12:]}") as tb:
        yield tb
