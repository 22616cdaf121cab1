"""CycloneDDS 11 (the cyclonedds package) with hello_idl.Hello, the partner
of test_dds.py: `dds_cyclone_peer.py sub N` prints N samples as JSON lines;
`dds_cyclone_peer.py pub N` writes N once matched and waits for acks.
Reliable, transient-local, KEEP_LAST 10; peers from CYCLONEDDS_URI."""

import json
import sys
import time

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

from hello_idl import Hello

role, n = sys.argv[1], int(sys.argv[2])
qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal, Policy.History.KeepLast(10))
dp = DomainParticipant(0)
topic = Topic(dp, "HelloWorld", Hello)
end = time.time() + 40
if role == "sub":
    got = 0
    for s in DataReader(dp, topic, qos=qos).take_iter(timeout=duration(seconds=30)):
        print(json.dumps({"id": s.id, "count": s.count, "text": s.text}), flush=True)
        got += 1
        if got == n:
            break
    sys.exit(0 if got == n else 1)
writer = DataWriter(dp, topic, qos=qos)
while not writer.get_matched_subscriptions() and time.time() < end:
    time.sleep(0.02)
for count in range(n):
    writer.write(Hello(id=5, count=count, text=f"from cyclonedds {count}"))
writer.wait_for_acks(duration(seconds=10))
time.sleep(0.5)
