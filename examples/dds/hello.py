"""Hello world over detpath.dds: `python3 hello.py sub|pub SPEC PEER` (e.g. sub udp://10.0.0.2:7410 10.0.0.1)"""
import sys, time
from dataclasses import dataclass
from pycdr2 import IdlStruct
from pycdr2.annotations import key
from pycdr2.types import int32, uint32
from detpath.dds import DataReader, DataWriter, DomainParticipant, Policy, Qos, Topic, duration

@dataclass
class Hello(IdlStruct, typename="hello::Hello"):
    id: int32
    key("id")
    count: uint32
    text: str

role, spec, peer = sys.argv[1:4]
with DomainParticipant(0, endpoint=spec, peers=[peer]) as dp:
    topic = Topic(dp, "HelloWorld", Hello)
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal, Policy.History.KeepLast(10))
    if role == "pub":
        writer = DataWriter(dp, topic, qos=qos)
        while not writer.get_matched_subscriptions():
            time.sleep(0.02)
        for count in range(10):
            writer.write(Hello(id=3, count=count, text=f"hello from python {count}"))
        writer.wait_for_acks(duration(seconds=10))
    else:
        for n, sample in zip(range(10), DataReader(dp, topic, qos=qos).take_iter(timeout=duration(seconds=30))):
            print(sample.id, sample.count, sample.text, flush=True)
