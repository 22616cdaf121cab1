"""The rest of the cyclonedds spelling an application uses, as a user meets
it: ``read_iter``/``read_next`` beside ``take_iter``/``take_next`` (read
leaves samples, NOT_READ ones only), instance handles (``register_instance``,
``lookup_instance``, ``dispose_instance_handle``, ``unregister_instance_handle``,
``take``/``read`` of one instance), ``Listener`` callbacks (data available,
subscription and publication matched, a dropped reader unmatched), ``WaitSet``
with ``ReadCondition`` and ``GuardCondition``, and ``Qos`` as a container
(``+``, ``-``, ``==``, iteration, ``in``, ``qos[Policy.X]``, policies detpath
does not have refused by name); against detpath and against a CycloneDDS
Python participant. Needs root (the testbed), pycdr2 and cyclonedds
(missing: fail under CI=true, skip elsewhere)."""

import threading
import time

import pytest

import detpath
from test_dds import PORT, cyclone_peer, need, participants, pycdr2_types, until


def test_qos_is_a_container_as_in_cyclonedds():
    from detpath.dds import Policy, Qos, duration

    a = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
    b = Qos(Policy.History.KeepAll, Policy.Deadline(duration(milliseconds=100)), Policy.Partition(["p1", "p2"]))
    both = a + b
    assert both[Policy.History] == Policy.History.KeepAll, "b's policy wins"
    assert both[Policy.Reliability] == Policy.Reliability.Reliable(duration(seconds=1))
    assert both[Policy.Ownership] is None
    assert Policy.Deadline in both and Policy.Liveliness not in both
    assert Policy.Partition(["p1", "p2"]) in both and Policy.Partition(["p3"]) not in both
    assert len(both) == 4 and {p.__scope__ for p in both} == {"Reliability", "History", "Deadline", "Partition"}
    assert both == Qos(Policy.Partition(["p1", "p2"]), Policy.Deadline(duration(milliseconds=100)), Policy.History.KeepAll, Policy.Reliability.Reliable(duration(seconds=1)))
    assert both != a
    assert both - b == Qos(Policy.Reliability.Reliable(duration(seconds=1)))
    assert Qos(Policy.Ownership.Exclusive, base=a)[Policy.History] == Policy.History.KeepLast(10)
    every = Qos(
        Policy.Liveliness.Automatic(duration(seconds=2)),
        Policy.Ownership.Exclusive,
        Policy.LatencyBudget(duration(microseconds=100)),
        Policy.TransportPriority(40),
        Policy.Durability.TransientLocal,
        Policy.ResourceLimits(100, 10),
    )
    assert "liveliness=automatic:2000000000ns" in every._text() and "transport_priority=40" in every._text()
    with pytest.raises(detpath.QosError, match="History more than once"):
        Qos(Policy.History.KeepAll, Policy.History.KeepLast(1))
    with pytest.raises(detpath.QosError, match="cannot be removed"):
        a - b
    with pytest.raises(detpath.QosError, match="Lifespan: detpath's engine keeps no LIFESPAN"):
        Policy.Lifespan(duration(seconds=1))
    with pytest.raises(detpath.QosError, match="not a policy"):
        a["Reliability"]


def test_read_next_read_iter_and_instance_handles(testbed):
    Hello, _ = pycdr2_types()
    from detpath import dds
    from detpath.dds import DataReader, DataWriter, Policy, Qos, Topic, duration

    a, b = participants(testbed, dds)
    with a, b:
        qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll)
        tw = Topic(a, "Instances", Hello)
        w = DataWriter(a, tw, qos=qos)
        tr = Topic(b, "Instances", Hello)
        r = DataReader(b, tr, qos=qos)
        until("matched", lambda: w.get_matched_subscriptions() and r.get_matched_publications())
        assert w.lookup_instance(Hello(id=1, count=0, text="")) is None
        h1 = w.register_instance(Hello(id=1, count=0, text=""))
        assert w.lookup_instance(Hello(id=1, count=9, text="any")) == h1
        for i, id_ in enumerate([1, 2, 1]):
            w.write(Hello(id=id_, count=i, text=f"s{i}"))
        h2 = w.lookup_instance(Hello(id=2, count=0, text=""))
        assert h2 is not None and h2 != h1
        until("three samples", lambda: len(r.read(N=10)) == 3)
        # read_next / read_iter walk only what no read returned yet.
        assert r.read_next() is None
        w.write(Hello(id=2, count=3, text="s3"))
        until("sample 3", lambda: r.status()["waiting"] == 1)
        assert r.read_next().count == 3
        assert r.read_next() is None
        w.write(Hello(id=3, count=4, text="s4"))
        assert [s.count for s in r.read_iter(timeout=duration(milliseconds=500))] == [4]
        assert [s.count for s in r.read(N=10)] == [0, 1, 2, 3, 4], "reads leave every sample"
        # One instance: read and take by its handle (the reader's own).
        rh2 = r.lookup_instance(Hello(id=2, count=0, text=""))
        assert rh2 is not None and r.lookup_instance(Hello(id=9, count=0, text="")) is None
        assert [(s.id, s.count) for s in r.read(N=10, instance_handle=rh2)] == [(2, 1), (2, 3)]
        assert [(s.id, s.count) for s in r.take(N=1, instance_handle=rh2)] == [(2, 1)]
        assert [(s.id, s.count) for s in r.take(N=10)] == [(1, 0), (1, 2), (2, 3), (3, 4)]
        # Dispose and unregister by handle reach a reader.
        w.dispose_instance_handle(h1)
        w.unregister_instance_handle(h2)
        until("the dispose arrived", lambda: r.status()["received"] >= 7)
        assert r.take(N=10) == [], "a dispose and an unregister carry no sample"
        w.write(Hello(id=1, count=5, text="again"))
        got = r.take_iter(timeout=duration(seconds=2))
        assert next(got).sample_info.instance_state == "alive"
        with pytest.raises(detpath.DdsError, match="not registered with this writer"):
            w.dispose_instance_handle(h2)
        with pytest.raises(detpath.DdsError, match="no instance with handle 99"):
            w.dispose_instance_handle(99)


def test_listeners_and_waitsets(testbed):
    Hello, _ = pycdr2_types()
    from detpath import dds
    from detpath.dds import DataReader, DataWriter, GuardCondition, InstanceState, Listener, Policy, Qos, ReadCondition, SampleState, Topic, ViewState, WaitSet, duration

    calls, lock = [], threading.Lock()

    def note(*what):
        with lock:
            calls.append(what)

    class Taker(Listener):
        def on_data_available(self, reader):
            for s in reader.take(N=10):
                note("data", s.count)

    a, b = participants(testbed, dds)
    with a, b:
        qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll)
        wl = Listener(on_publication_matched=lambda w, st: note("pub", st.current_count, st.current_count_change))
        w = DataWriter(a, Topic(a, "Listened", Hello), qos=qos, listener=wl)
        r = DataReader(b, Topic(b, "Listened", Hello), qos=qos, listener=Taker(on_subscription_matched=lambda r, st: note("sub", st.current_count)))
        until("both matched callbacks", lambda: ("pub", 1, 1) in calls and ("sub", 1) in calls)
        for i in range(3):
            w.write(Hello(id=1, count=i, text="x"))
        until("the listener took every sample", lambda: [c[1] for c in calls if c[0] == "data"] == [0, 1, 2])

        # A wait set with a read condition: times out empty, wakes on a sample.
        r.set_listener(None)
        r2 = DataReader(b, Topic(b, "Listened", Hello), qos=qos)
        until("the second reader matched", lambda: len(w.get_matched_subscriptions()) == 2)
        until("its callback", lambda: ("pub", 2, 1) in calls)
        r2.take(N=100)
        ws = WaitSet(b)
        rc = ReadCondition(r2, SampleState.NotRead | ViewState.Any | InstanceState.Alive)
        ws.attach(rc)
        t0 = time.monotonic()
        assert ws.wait(duration(milliseconds=300)) == 0
        assert time.monotonic() - t0 >= 0.25, "wait returned before its timeout"
        threading.Timer(0.2, lambda: w.write(Hello(id=2, count=7, text="y"))).start()
        assert ws.wait(duration(seconds=5)) == 1
        assert [s.count for s in r2.read(condition=rc)] == [7]
        assert ws.wait(duration(milliseconds=100)) == 0, "a read sample no longer triggers a NOT_READ condition"
        assert [s.count for s in r2.take(N=5, condition=ReadCondition(r2, InstanceState.Alive))] == [7]
        guard = GuardCondition(b)
        ws.attach(guard)
        threading.Timer(0.2, guard.set_trigger_value).start()
        assert ws.wait(duration(seconds=5)) == 1 and guard.read_trigger()
        ws.detach(guard)
        with pytest.raises(detpath.DdsError, match="not attached"):
            ws.detach(guard)

        # A reader dropped: the writer's listener hears it unmatched.
        del r2, ws, rc
        until("the writer's listener saw a reader go", lambda: ("pub", 1, -1) in calls)


def test_listener_and_read_iter_with_a_cyclonedds_peer(testbed):
    need("cyclonedds", "cyclonedds", "deps/pip-pubsub.txt")
    from hello_idl import Hello

    from detpath import dds
    from detpath.dds import DataReader, DataWriter, Listener, Policy, Qos, Topic, duration

    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal, Policy.History.KeepLast(10))
    events = []
    listener = Listener(
        on_data_available=lambda r: events.append("data"),
        on_subscription_matched=lambda r, st: events.append(("sub", st.current_count)),
        on_publication_matched=lambda w, st: events.append(("pub", st.current_count)),
    )
    with dds.DomainParticipant(0, endpoint=testbed.uri("a", "udp", PORT), peers=[testbed.b["addr"]], netns=testbed.a["netns"]) as dp:
        r = DataReader(dp, Topic(dp, "HelloWorld", Hello), qos=qos, listener=listener)
        pub = cyclone_peer(testbed, "b", "a", "pub", "10")
        try:
            got = []
            for s in r.read_iter(timeout=duration(seconds=20)):
                got.append((s.id, s.count))
                if len(got) == 10:
                    break
            until("data available was called", lambda: "data" in events)
            assert ("sub", 1) in events
            assert [(s.id, s.count) for s in r.take(N=20)] == got, "read_iter left the samples"
        finally:
            pub.communicate(timeout=60)
        assert got == [(5, i) for i in range(10)]
        # A CycloneDDS reader matching a detpath writer calls on_publication_matched.
        w = DataWriter(dp, Topic(dp, "HelloWorld", Hello), qos=qos, listener=listener)
        sub = cyclone_peer(testbed, "b", "a", "sub", "1")
        try:
            until("cyclonedds's reader matched (listener)", lambda: ("pub", 1) in events, limit=20)
            w.write(Hello(id=6, count=0, text="to cyclonedds"))
            out, _ = sub.communicate(timeout=60)
        finally:
            if sub.poll() is None:
                sub.kill()
        assert '"to cyclonedds"' in out
        assert dp.counters()["rx_malformed"] == 0
