"""A stand-in for a ROS 2 node on rmw_cyclonedds_cpp, the partner of
test_ros2.py: CycloneDDS 11 (the cyclonedds package) under the DDS names
ROS 2 gives a topic and its type, with ROS 2's default QoS (reliable,
volatile, KEEP_LAST 10). `ros2_cyclone_node.py sub N` prints N Twists from
rt/cmd_vel as JSON lines; `ros2_cyclone_node.py pub N` writes N
std_msgs/msg/String on rt/chatter once matched. Peers from CYCLONEDDS_URI."""

import json
import sys
import time
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import float64
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


@dataclass
class Vector3(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64
    y: float64
    z: float64


@dataclass
class Twist(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3
    angular: Vector3


@dataclass
class String(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str


role, n = sys.argv[1], int(sys.argv[2])
qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.Volatile, Policy.History.KeepLast(10))
dp = DomainParticipant(0)
end = time.time() + 40
if role == "sub":
    reader = DataReader(dp, Topic(dp, "rt/cmd_vel", Twist), qos=qos)
    print("ready", flush=True)
    got = 0
    for s in reader.take_iter(timeout=duration(seconds=30)):
        print(json.dumps({"linear": vars(s.linear), "angular": vars(s.angular)}), flush=True)
        got += 1
        if got == n:
            break
    sys.exit(0 if got == n else 1)
writer = DataWriter(dp, Topic(dp, "rt/chatter", String), qos=qos)
while not writer.get_matched_subscriptions() and time.time() < end:
    time.sleep(0.02)
for i in range(n):
    writer.write(String(data=f"hello from a ROS 2 node {i}"))
writer.wait_for_acks(duration(seconds=10))
time.sleep(0.5)
