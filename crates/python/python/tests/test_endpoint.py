"""detpath.open / Endpoint: traffic, metadata, counters, capabilities, the
slot scheduler's spec keys, and bad input (wrong types raise TypeError,
detpath errors a detpath.Error subclass with detpath's message)."""

import os
import signal
import threading
import time

import pytest

import detpath
from conftest import require


def test_loopback_roundtrip_with_metadata(pair):
    a, b = pair
    ip, port = a.local_addr
    assert ip == "127.0.0.1" and port > 0
    before = time.monotonic_ns()
    b.send_to(b"hello", a.local_addr)
    got = a.recv(timeout=1.0)
    assert got is not None
    payload, peer, rx_ns = got
    assert payload == b"hello"
    assert peer == b.local_addr
    assert before <= rx_ns <= time.monotonic_ns(), "rx_ns is CLOCK_MONOTONIC"
    b.send_to(bytearray(b"from a bytearray"), a.local_addr)
    assert a.recv(timeout=1.0, busy=False)[0] == b"from a bytearray"


def test_timeouts_return_none(pair):
    a, _ = pair
    assert a.recv(timeout=0) is None
    t0 = time.monotonic()
    assert a.recv(timeout=0.05) is None
    assert a.recv(timeout=0.05, busy=False) is None
    assert time.monotonic() - t0 >= 0.1


def test_counters_and_capabilities(pair):
    a, b = pair
    for i in range(3):
        b.send_to(bytes(10 + i), a.local_addr)
    for _ in range(3):
        assert a.recv(timeout=1.0) is not None
    c = a.counters()
    assert c["rx_packets"] == 3 and c["rx_bytes"] == 10 + 11 + 12
    assert b.counters()["tx_packets"] == 3
    assert set(c) >= {"rx_truncated", "rx_kernel_dropped", "tx_errors", "fill_ring_empty", "tx_no_route", "tx_no_neigh"}
    caps = a.capabilities()
    assert caps["datapath"] == "udp"
    assert caps["summary"].startswith("udp")
    assert caps["max_payload"] > 0 and isinstance(caps["notes"], list)
    assert "udp" in repr(a) and "open" in repr(a)


def test_context_manager_closes():
    with detpath.open("udp://127.0.0.1:0") as ep:
        addr = ep.local_addr
        assert not ep.closed
    assert ep.closed
    assert "closed" in repr(ep)
    with pytest.raises(detpath.ClosedError, match="closed"):
        ep.send_to(b"x", addr)
    with pytest.raises(detpath.Error):
        ep.recv(timeout=0)
    with pytest.raises(detpath.ClosedError):
        ep.counters()
    ep.close()  # twice is fine


def test_wrong_types_raise_type_error(pair):
    a, b = pair
    with pytest.raises(TypeError):
        detpath.open(123)
    with pytest.raises(TypeError, match="bytes or bytearray"):
        b.send_to("a str is not bytes", a.local_addr)
    with pytest.raises(TypeError):
        b.send_to(b"x", "127.0.0.1:9")
    with pytest.raises(TypeError):
        b.send_to(b"x", ("127.0.0.1", "nine"))
    with pytest.raises(TypeError):
        a.recv(timeout="soon")
    with pytest.raises(TypeError):
        a.recv(busy="yes")


def test_bad_values_raise_value_errors(pair):
    a, b = pair
    with pytest.raises(ValueError, match="not an IPv4 address"):
        b.send_to(b"x", ("999.1.1.1", 9))
    with pytest.raises(OverflowError):
        b.send_to(b"x", ("127.0.0.1", 70000))
    with pytest.raises(ValueError, match="timeout"):
        a.recv(timeout=-1)


def test_detpath_errors_are_typed_with_the_message(pair):
    with pytest.raises(detpath.SpecError, match="unknown datapath `bogus`"):
        detpath.open("bogus://x")
    with pytest.raises(detpath.SpecError, match="port"):
        detpath.open("udp://127.0.0.1:7000?port=abc")
    with pytest.raises(detpath.InterfaceError, match="nosuchif0"):
        detpath.open("afxdp://nosuchif0?port=7000")
    with pytest.raises(detpath.Error, match="no-such-ns"):
        detpath.open("udp://127.0.0.1:0", netns="no-such-ns")
    a, b = pair
    with pytest.raises(detpath.NetworkError):
        b.send_to(bytes(70000), a.local_addr)
    assert issubclass(detpath.SpecError, detpath.Error)
    assert issubclass(detpath.Error, Exception)


def test_a_busy_endpoint_raises_instead_of_waiting(pair):
    a, b = pair
    result = {}
    inside = threading.Event()

    def wait():
        inside.set()
        result["got"] = a.recv(timeout=2.0)

    t = threading.Thread(target=wait)
    t.start()
    inside.wait()
    time.sleep(0.1)  # the waiter is inside recv with the GIL released
    with pytest.raises(detpath.Error, match="another thread"):
        a.counters()
    assert not a.closed and "open" in repr(a), "looking at a busy endpoint neither waits nor fails"
    with pytest.raises(detpath.Error, match="another thread"):
        a.close()
    b.send_to(b"wake", a.local_addr)
    t.join()
    assert result["got"][0] == b"wake"
    assert a.counters()["rx_packets"] == 1


def test_a_signal_interrupts_an_endless_receive(pair):
    a, _ = pair

    class Alarm(Exception):
        pass

    def on_alarm(signum, frame):
        raise Alarm()

    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        t0 = time.monotonic()
        with pytest.raises(Alarm):
            a.recv(timeout=None)
        assert time.monotonic() - t0 < 1.0, "the signal was seen within a slice"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_afxdp_in_the_testbed(testbed):
    b_ns, a_ns = testbed.b["netns"], testbed.a["netns"]
    server = detpath.open(testbed.uri("b", "afxdp", 7400), netns=b_ns)
    client = detpath.open(testbed.uri("a", "udp", 7401), netns=a_ns)
    with server, client:
        caps = server.capabilities()
        assert caps["datapath"] == "afxdp" and caps["iface"] == "dpb"
        assert caps["xdp_mode"] in ("native", "skb") and caps["zero_copy"] is not None
        dest = (testbed.b["addr"], 7400)
        for i in range(50):
            msg = b"ping %d " % i + bytes(i * 20)
            client.send_to(msg, dest)
            got = server.recv(timeout=2.0)
            assert got is not None, f"round {i}: nothing reached the afxdp endpoint"
            payload, peer, _ = got
            assert payload == msg and peer == (testbed.a["addr"], 7401)
            server.send_to(payload, peer)
            back = client.recv(timeout=2.0)
            assert back is not None and back[0] == msg and back[1] == dest
        c = server.counters()
        assert c["rx_packets"] == 50 and c["tx_packets"] == 50 and c["rx_malformed"] == 0


def test_testbed_close_removes_namespaces():
    require("test_testbed_close_removes_namespaces", "root (namespaces)", os.geteuid() == 0, "run the tests as root, e.g. `sudo make test`")
    tb = detpath.Testbed()
    ns = tb.a["netns"], tb.b["netns"]
    assert all(os.path.exists(f"/run/netns/{n}") for n in ns)
    with pytest.raises(ValueError):
        tb.uri("c", "udp", 1)
    tb.close()
    assert not any(os.path.exists(f"/run/netns/{n}") for n in ns)
    with pytest.raises(detpath.ClosedError):
        tb.a
    tb.close()


def test_sched_keys_hold_a_datagram_until_its_slot():
    """A `sched=slots` spec: `bulk` owns position 3 of a 5-slot ring of
    20 ms slots, so a datagram sent 5 ms into a ring cycle leaves 60 ms into
    it, while the sender is received on (its receive serves the slots)."""
    slot_ns, ring_ns = 20_000_000, 100_000_000
    spec = "udp://127.0.0.1:0?sched=slots&slot_ns=20000000&ring_slots=5&lead_slots=1&classes=bulk:be:3"
    with detpath.open("udp://127.0.0.1:0") as rx, detpath.open(spec) as tx:
        time.sleep((ring_ns - time.monotonic_ns() % ring_ns + 5_000_000) / 1e9)
        tx.send_to(b"slotted", rx.local_addr)
        time.sleep(0.01)
        assert rx.recv(timeout=0) is None, "held until its slot, not sent at once"
        assert tx.recv(timeout=0.15) is None
        got = rx.recv(timeout=1.0)
        assert got is not None and got[0] == b"slotted"
        at = got[2] % ring_ns
        # Released at the slot's start; 15 ms of slack past the slot for a loaded machine.
        assert 3 * slot_ns <= at < 4 * slot_ns + 15_000_000, f"arrived {at / 1e6:.1f} ms into the ring cycle"
        assert tx.counters()["tx_packets"] == 1


def test_bad_sched_keys_name_the_key():
    with pytest.raises(detpath.SpecError, match="`sched_mod` is not a key of the slot scheduler"):
        detpath.open("udp://127.0.0.1:0?sched=slots&classes=bulk:be:0&sched_mod=strict")
    with pytest.raises(detpath.SpecError, match="`slot_ns` is a key of the slot scheduler: add `sched=slots`"):
        detpath.open("udp://127.0.0.1:0?slot_ns=1000")
    with pytest.raises(detpath.SpecError, match="slot_ns=ten"):
        detpath.open("udp://127.0.0.1:0?sched=slots&slot_ns=ten&classes=bulk:be:0")
