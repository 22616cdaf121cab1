"""The cyclonedds spelling detpath.dds follows beyond write/take: the DDS
statuses as ``get_*_status()`` with their ``*_change`` fields (reset by each
read, as a DDS status read does), ``take_next()``, ``write_dispose()``, the
``timestamp`` parameter cyclonedds has (refused with a DdsError saying
so, never silently ignored), a condition or instance handle that is not
this reader's refused, and
``Topic.get_name()``/``get_type_name()``. Needs root (the testbed) and
pycdr2 (deps/pip-dds.txt; missing: fails under CI=true, skips elsewhere)."""

import pytest

import detpath
from test_dds import participants, pycdr2_types, until


def test_statuses_take_next_write_dispose_and_refused_parameters(testbed):
    Hello, _ = pycdr2_types()
    from detpath import dds
    from detpath.dds import DataReader, DataWriter, Policy, Qos, Topic, duration

    a, b = participants(testbed, dds)
    with a, b:
        qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll)
        topic = Topic(a, "Spelling", Hello)
        assert (topic.get_name(), topic.get_type_name()) == ("Spelling", "hello::Hello")
        w = DataWriter(a, topic, qos=qos)
        r = DataReader(b, Topic(b, "Spelling", Hello), qos=qos)
        until("matched", lambda: w.get_publication_matched_status().current_count == 1 or None)
        # The change was seen by the read above: the next read shows none.
        st = w.get_publication_matched_status()
        assert (st.current_count, st.current_count_change, st.total_count, st.total_count_change) == (1, 0, 1, 0)
        until("the reader matched", lambda: r.get_subscription_matched_status().current_count == 1)
        assert r.get_subscription_matched_status().current_count_change == 0

        assert r.take_next() is None
        w.write(Hello(id=1, count=1, text="one"))
        until("sample one", lambda: r.read(N=1))
        got = r.take_next()
        assert (got.id, got.count, got.text) == (1, 1, "one")
        assert r.take_next() is None

        w.write_dispose(Hello(id=2, count=2, text="two"))
        got = list(r.take_iter(timeout=duration(seconds=2)))
        assert [(s.id, s.text) for s in got] == [(2, "two")], "the sample; the dispose carries no data"
        assert r.status()["received"] >= 2

        assert r.get_sample_lost_status() == (0, 0)
        assert r.get_sample_rejected_status().total_count == 0
        assert r.get_requested_incompatible_qos_status().total_count == 0
        assert w.get_offered_incompatible_qos_status().total_count == 0
        assert r.get_requested_deadline_missed_status().total_count == 0

        with pytest.raises(detpath.DdsError, match="take a ReadCondition of the same reader"):
            r.take(N=1, condition=object())
        with pytest.raises(detpath.DdsError, match="no instance with handle 5 on topic 'Spelling'"):
            r.read(N=1, instance_handle=5)
        with pytest.raises(detpath.DdsError, match="timestamp"):
            w.write(Hello(id=3, count=3, text="three"), timestamp=123)
