"""TRANSPORT_PRIORITY and LATENCY_BUDGET through detpath.dds with the
cyclonedds spelling (``Policy.TransportPriority(n)``,
``Policy.LatencyBudget(duration(microseconds=...))``), in the testbed's two
namespaces (one host: one clock): every sample a reader takes is counted
once in ``latency_budget_status()`` and judged on the host's clock; with a
budget nothing meets, ``wait_for_over_budget`` wakes and the status says
how many and why; bad budgets raise QosError saying so. No timing
assertions."""

import threading
from dataclasses import dataclass

import pytest

import detpath
from test_dds import need, participants, until


def types():
    need("pycdr2", "pycdr2", "deps/pip-dds.txt")
    from pycdr2 import IdlStruct
    from pycdr2.types import uint32

    @dataclass
    class Tick(IdlStruct, typename="budget::Tick"):
        seq: uint32

    return Tick


def test_policies_spell_as_cyclonedds_and_bad_budgets_are_refused():
    from detpath.dds import Policy, Qos, duration

    q = Qos(Policy.TransportPriority(20), Policy.LatencyBudget(duration(microseconds=100)))
    assert set(q._text().split(";")) == {"transport_priority=20", "latency_budget=100000ns"}
    assert repr(q) == "Qos(Policy.LatencyBudget(100000), Policy.TransportPriority(20))", "sorted by kind, as cyclonedds sorts"
    for bad in (0, duration(hours=2), None):
        with pytest.raises(detpath.QosError, match="above 0 and at most 1 hour"):
            Policy.LatencyBudget(bad)
    from detpath import dds

    with pytest.raises(detpath.QosError, match="auto or synced"):
        dds.DomainParticipant(0, endpoint="udp://127.0.0.1:0", peers=["127.0.0.1"], clock="ptp")
    with pytest.raises(detpath.QosError, match="above 0"):
        dds.DomainParticipant(0, endpoint="udp://127.0.0.1:0", peers=["127.0.0.1"], priority_map="0=CS0,5=0")


def test_samples_are_held_to_the_budget_and_late_ones_wake_the_reader(testbed):
    Tick = types()
    from detpath import dds
    from detpath.dds import DataReader, DataWriter, Policy, Qos, Topic, duration

    a, b = participants(testbed, dds)
    with a, b:
        qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll, Policy.TransportPriority(40), Policy.LatencyBudget(duration(seconds=1)))
        w = DataWriter(a, Topic(a, "Control", Tick), qos=qos)
        r = DataReader(b, Topic(b, "Control", Tick), qos=qos)
        until("matched", lambda: len(w.get_matched_subscriptions()) == 1 and len(r.get_matched_publications()) == 1)
        for i in range(50):
            w.write(Tick(seq=i))
        got = list(r.take_iter(timeout=duration(seconds=2)))
        assert [t.seq for t in got] == list(range(50))
        s = r.latency_budget_status()
        assert s["budget_ns"] == 1_000_000_000
        assert s["within"] + s["over"] + s["unjudged"] + s["implausible"] == 50, s
        assert s["clock"] == "same-host", s
        assert s["unjudged"] == 0, s
        assert s["latency"]["count"] == s["within"] + s["over"], s
        assert sum(n for _, n in s["latency"]["buckets"]) == s["latency"]["count"], s
        assert s["latency"]["buckets"][-1][0] is None, "the last bucket is +Inf"
        assert set(s["causes"]) == {"sent_late", "retransmission", "reader_late", "network"}

        # A budget nothing meets: the reader is woken for its late samples.
        tight = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll, Policy.LatencyBudget(duration(nanoseconds=1)))
        w2 = DataWriter(a, Topic(a, "Tight", Tick), qos=tight)
        r2 = DataReader(b, Topic(b, "Tight", Tick), qos=tight)
        until("matched", lambda: len(w2.get_matched_subscriptions()) == 1)
        assert r2.wait_for_over_budget(timeout=duration(milliseconds=100)) is False
        woke = []
        waiter = threading.Thread(target=lambda: woke.append(r2.wait_for_over_budget(timeout=duration(seconds=10))))
        waiter.start()
        for i in range(10):
            w2.write(Tick(seq=i))
        waiter.join()
        assert woke == [True]
        until("ten judged", lambda: r2.latency_budget_status()["over"] == 10)
        s = r2.latency_budget_status()
        assert (s["within"], s["over"], s["over_change"]) == (0, 10, 0), s
        assert sum(s["causes"].values()) == 10, s
        assert r2.wait_for_over_budget(timeout=duration(milliseconds=200)) is False
