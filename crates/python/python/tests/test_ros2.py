"""ROS 2 naming in detpath.dds as a ROS user meets it, with ROS 2's own
message definitions and CDR serializer (the ``rosbags`` package): a detpath
writer of ``Topic(dp, "/cmd_vel", Twist, ros2=True)`` is on the wire as the
DDS topic ``rt/cmd_vel`` of type ``geometry_msgs::msg::dds_::Twist_`` (a
reader under exactly those names matches) and its bytes decode with
rosbags' deserializer field for field; the reverse: messages rosbags
serialized, written under ROS 2's DDS names, come out of a detpath
``ros2=True`` reader field for field; and CycloneDDS under the names
rmw_cyclonedds_cpp gives a ROS 2 node (ros2_cyclone_node.py) exchanges
Twist and String with detpath both ways. Names ROS refuses raise DdsError.
rosbags and pycdr2 come from deps/pip-dds.txt, cyclonedds from
deps/pip-pubsub.txt: missing, the tests fail under CI=true and skip
elsewhere. Needs root (the testbed's namespaces)."""

from dataclasses import dataclass

import pytest

import detpath
from test_dds import _remove_peer_configs, cyclone_peer, need, participants, until  # noqa: F401 (the fixture removes the peers' configs)

TWIST = "geometry_msgs/msg/Twist"
# ROS 2's default QoS for publishers and subscriptions: reliable, volatile, KEEP_LAST 10.
ROS_QOS_TEXT = "reliability=reliable;history=keep_last:10"


def ros_types():
    """The ROS 2 messages declared once as pycdr2 IdlStructs under ROS's IDL
    names, and rosbags' typestore (ROS 2 Humble's definitions)."""
    need("pycdr2", "pycdr2", "deps/pip-dds.txt")
    need("rosbags", "rosbags", "deps/pip-dds.txt")
    from pycdr2 import IdlStruct
    from pycdr2.types import float64
    from rosbags.typesys import Stores, get_typestore

    @dataclass
    class Vector3(IdlStruct, typename="geometry_msgs.msg.Vector3"):
        x: float64
        y: float64
        z: float64

    @dataclass
    class Twist(IdlStruct, typename="geometry_msgs.msg.Twist"):
        linear: Vector3
        angular: Vector3

    @dataclass
    class String(IdlStruct, typename="std_msgs.msg.String"):
        data: str

    return Vector3, Twist, String, get_typestore(Stores.ROS2_HUMBLE)


def fields(msg):
    """A rosbags message's fields, nested, without its __msgtype__."""
    if hasattr(msg, "__msgtype__"):
        return {k: fields(v) for k, v in vars(msg).items() if k != "__msgtype__"}
    return msg


def test_a_detpath_twist_is_ros2_cdr_under_ros2_dds_names(testbed):
    Vector3, Twist, _, ts = ros_types()
    from detpath import dds
    from detpath.dds import DataWriter, Policy, Qos, Topic

    a, b = participants(testbed, dds)
    with a, b:
        topic = Topic(a, "/cmd_vel", Twist, ros2=True)
        assert (topic.get_name(), topic.get_type_name(), topic.ros_name) == ("rt/cmd_vel", "geometry_msgs::msg::dds_::Twist_", "/cmd_vel")
        w = DataWriter(a, topic, qos=Qos(Policy.Reliability.Reliable(), Policy.History.KeepLast(10)))
        # A reader under exactly the DDS names a ROS 2 node uses (what rmw_cyclonedds creates).
        raw = b._native.create_reader("rt/cmd_vel", "geometry_msgs::msg::dds_::Twist_", False, ROS_QOS_TEXT)
        until("the ROS 2 names match", lambda: w.get_matched_subscriptions() and raw.status()["matched_publications"] == 1)
        sent = [Twist(Vector3(0.5, -1.25, 2.0), Vector3(0.0, 3.5, -0.125)), Twist(Vector3(-7.0, 1e-9, 3.0e8), Vector3(1.0, 2.0, 3.0))]
        for m in sent:
            w.write(m)
        got = []
        until("both messages", lambda: got.extend(raw.take_timeout(10, 0.1)) or len(got) == 2)
        for (payload, info), m in zip(got, sent):
            decoded = ts.deserialize_cdr(bytes(payload), TWIST)
            assert decoded.__msgtype__ == TWIST
            want = {"linear": vars(m.linear), "angular": vars(m.angular)}
            assert fields(decoded) == want, "rosbags decodes detpath's bytes field for field"
            assert info["valid_data"]
        assert b.counters()["rx_malformed"] == 0


def test_ros2_cdr_from_rosbags_reaches_a_detpath_ros2_reader(testbed):
    Vector3, Twist, String, ts = ros_types()
    from detpath import dds
    from detpath.dds import DataReader, Policy, Qos, Topic

    a, b = participants(testbed, dds)
    with a, b:
        qos = Qos(Policy.Reliability.Reliable(), Policy.History.KeepLast(10))
        twists = DataReader(b, Topic(b, "/robot1/cmd_vel", Twist, ros2=True), qos=qos)
        chatter = DataReader(b, Topic(b, "chatter", String, ros2=True), qos=qos)
        # Writers under the DDS names, carrying ROS 2's own serialization of the messages.
        tw = a._native.create_writer("rt/robot1/cmd_vel", "geometry_msgs::msg::dds_::Twist_", False, ROS_QOS_TEXT)
        cw = a._native.create_writer("rt/chatter", "std_msgs::msg::dds_::String_", False, ROS_QOS_TEXT)
        until("the ROS 2 names match", lambda: tw.status()["matched_subscriptions"] == 1 and cw.status()["matched_subscriptions"] == 1)
        RosTwist, RosVector3, RosString = ts.types[TWIST], ts.types["geometry_msgs/msg/Vector3"], ts.types["std_msgs/msg/String"]
        sent = RosTwist(linear=RosVector3(x=1.5, y=-2.0, z=0.25), angular=RosVector3(x=0.0, y=0.0, z=-3.75))
        tw.write(bytes(ts.serialize_cdr(sent, TWIST)))
        for text in ["hello", "", "grüße, ROS 2"]:
            cw.write(bytes(ts.serialize_cdr(RosString(data=text), "std_msgs/msg/String")))
        got = twists.take_one(timeout=5 * 10**9)
        assert {"linear": vars(got.linear), "angular": vars(got.angular)} == fields(sent)
        texts = []
        until("three strings", lambda: texts.extend(s.data for s in chatter.take(N=10)) or len(texts) == 3)
        assert texts == ["hello", "", "grüße, ROS 2"]
        assert twists.status()["undecodable"] == 0 and chatter.status()["undecodable"] == 0


def test_names_ros_refuses_raise_what_was_wrong(testbed):
    _, Twist, _, _ = ros_types()
    from detpath import dds
    from detpath.dds import Topic

    a, b = participants(testbed, dds)
    with a, b:
        with pytest.raises(detpath.DdsError, match='ROS 2 topic name "cmd vel"'):
            Topic(a, "cmd vel", Twist, ros2=True)
        with pytest.raises(detpath.DdsError, match="empty token"):
            Topic(a, "/robot1//cmd_vel", Twist, ros2=True)

        from pycdr2 import IdlStruct
        from pycdr2.types import int32

        @dataclass
        class Plain(IdlStruct, typename="Plain"):
            x: int32

        with pytest.raises(detpath.DdsError, match=r"ROS 2 message type \"Plain\".*std_msgs/msg/String"):
            Topic(a, "/plain", Plain, ros2=True)


def test_a_cyclonedds_node_under_ros2_names_and_detpath_both_ways(testbed):
    Vector3, Twist, String, _ = ros_types()
    need("cyclonedds", "cyclonedds", "deps/pip-pubsub.txt")
    import json

    from detpath import dds
    from detpath.dds import DataReader, DataWriter, Policy, Qos, Topic, duration

    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(10))
    ep = testbed.uri("a", "udp", 7410)
    # detpath -> the node: Twists on /cmd_vel.
    node = cyclone_peer(testbed, "b", "a", "sub", "3", script="ros2_cyclone_node.py")
    assert node.stdout.readline().strip() == "ready"
    sent = [Twist(Vector3(i + 0.5, -1.0, 2.0 * i), Vector3(0.0, 0.25, -i)) for i in range(3)]
    with dds.DomainParticipant(0, endpoint=ep, peers=[testbed.b["addr"]], netns=testbed.a["netns"]) as dp:
        w = DataWriter(dp, Topic(dp, "/cmd_vel", Twist, ros2=True), qos=qos)
        until("the node's reader matched", lambda: w.get_matched_subscriptions(), limit=20)
        for m in sent:
            w.write(m)
        assert w.wait_for_acks(duration(seconds=10))
        out, _ = node.communicate(timeout=60)
    assert node.returncode == 0, out
    assert [json.loads(l) for l in out.splitlines()] == [{"linear": vars(m.linear), "angular": vars(m.angular)} for m in sent]
    # The node -> detpath: std_msgs/msg/String on /chatter.
    with dds.DomainParticipant(0, endpoint=ep, peers=[testbed.b["addr"]], netns=testbed.a["netns"]) as dp:
        r = DataReader(dp, Topic(dp, "chatter", String, ros2=True), qos=qos)
        node = cyclone_peer(testbed, "b", "a", "pub", "3", script="ros2_cyclone_node.py")
        try:
            got = []
            for s in r.take_iter(timeout=duration(seconds=20)):
                got.append(s.data)
                if len(got) == 3:
                    break
        finally:
            node.communicate(timeout=60)
        assert got == [f"hello from a ROS 2 node {i}" for i in range(3)]
        assert r.status()["undecodable"] == 0 and dp.counters()["rx_malformed"] == 0
