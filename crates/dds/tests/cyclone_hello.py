#!/usr/bin/env python3
"""CycloneDDS 11 (the `cyclonedds` Python package) as the partner of the
hello world, with the same type (`hello::Hello`):

    cyclone_hello.py sub N     take N greetings, print each as a JSON line, exit 0
    cyclone_hello.py pub N     write N greetings once a reader matched, wait for acks
    cyclone_hello.py watch N   a writer printing its matched readers at each change
                               (JSON lines); exit 0 once N were matched and then none

Reliable, transient-local, KEEP_LAST 10 (the examples' QoS). Unicast
discovery comes from CYCLONEDDS_URI (the test writes it). Exit 3: the
package is missing (the first line says so).
"""

import json
import sys
import time
from dataclasses import dataclass

try:
    from cyclonedds.core import Policy, Qos
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.idl import IdlStruct
    from cyclonedds.idl.annotations import key
    from cyclonedds.idl.types import int32, uint32
    from cyclonedds.pub import DataWriter
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from cyclonedds.util import duration
except ImportError as e:
    print(json.dumps({"ev": "missing", "what": f"python package cyclonedds ({e}); run `make deps`"}), flush=True)
    sys.exit(3)


@dataclass
class Hello(IdlStruct, typename="hello::Hello"):
    id: int32
    key("id")
    count: uint32
    text: str


def main():
    role, n = sys.argv[1], int(sys.argv[2])
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal, Policy.History.KeepLast(10))
    dp = DomainParticipant(0)
    topic = Topic(dp, "HelloWorld", Hello)
    end = time.time() + 40
    if role == "sub":
        reader = DataReader(dp, topic, qos=qos)
        got = 0
        while got < n and time.time() < end:
            for s in reader.take(N=10):
                print(json.dumps({"ev": "sample", "id": s.id, "count": s.count, "text": s.text}), flush=True)
                got += 1
            time.sleep(0.01)
        sys.exit(0 if got >= n else 1)
    writer = DataWriter(dp, topic, qos=qos)
    if role == "watch":
        seen, peak = -1, 0
        while time.time() < end:
            now = writer.get_publication_matched_status().current_count
            if now != seen:
                print(json.dumps({"ev": "matched", "n": now}), flush=True)
                seen, peak = now, max(peak, now)
            if peak >= n and now == 0:
                sys.exit(0)
            writer.write(Hello(id=3, count=0, text="watching"))
            time.sleep(0.05)
        sys.exit(1)
    while writer.get_matched_subscriptions() == [] and time.time() < end:
        time.sleep(0.02)
    for count in range(n):
        writer.write(Hello(id=2, count=count, text=f"hello from cyclonedds {count}"))
    writer.wait_for_acks(duration(seconds=10))
    print(json.dumps({"ev": "wrote", "n": n}), flush=True)
    time.sleep(1)


main()
