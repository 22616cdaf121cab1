"""detpath: one datagram endpoint API over kernel UDP sockets, AF_XDP, XDP
poll and DPDK, from Python.

    import detpath
    with detpath.open("afxdp://eth1?port=7000") as ep:
        print(ep.capabilities()["summary"])
        got = ep.recv(timeout=1.0)          # (payload, (ip, port), rx_ns) or None
        if got:
            payload, peer, rx_ns = got
            ep.send_to(payload, peer)

``detpath.results.load(dir)`` reads a ``detpath bench`` result directory into
pandas DataFrames. ``detpath.dds`` is DDS publish-subscribe spelled as the
``cyclonedds`` package spells it. Errors are ``detpath.Error`` subclasses carrying
detpath's own message; wrong argument types raise ``TypeError``.
"""

from ._detpath import (
    CapabilityError,
    ClosedError,
    DdsError,
    Endpoint,
    Error,
    InterfaceError,
    NetworkError,
    QosError,
    ResultsError,
    SampleError,
    SpecError,
    Testbed,
    UnsupportedError,
    __version__,
    open,
)
from . import results

__all__ = [
    "open",
    "Endpoint",
    "Testbed",
    "Error",
    "SpecError",
    "InterfaceError",
    "CapabilityError",
    "UnsupportedError",
    "NetworkError",
    "ClosedError",
    "ResultsError",
    "DdsError",
    "QosError",
    "SampleError",
    "results",
    "__version__",
]
