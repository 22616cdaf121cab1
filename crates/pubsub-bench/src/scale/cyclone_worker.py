# CycloneDDS side of `detpath pubsub scale`'s discovery test: N DomainParticipants
# in this process, each with one reliable writer and one reader of the same
# topic; prints JSON lines (the same protocol as detpath's worker, see
# scale/worker.rs) and stays alive until stdin closes so its RSS can be read.
# Arguments: participants expected_matches timeout_s. The baseline memory is
# read after the binding is imported: what each participant adds is measured.
import json, os, sys, time
from dataclasses import dataclass


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def say(**kw):
    print(json.dumps(kw), flush=True)


n, expected, timeout_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
from cyclonedds.domain import DomainParticipant
from cyclonedds.topic import Topic
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.core import Qos, Policy
from cyclonedds.idl import IdlStruct


@dataclass
class ScaleSample(IdlStruct, typename="ScaleSample"):
    seq: int


say(event="baseline", rss_kb=rss_kb())
qos = Qos(Policy.Reliability.Reliable(max_blocking_time=1_000_000_000), Policy.History.KeepLast(1))
ends = []
for i in range(n):
    dp = DomainParticipant(0)
    tp = Topic(dp, "DetpathScale", ScaleSample)
    ends.append((dp, tp, DataWriter(dp, tp, qos=qos), DataReader(dp, tp, qos=qos)))
say(event="created", t_ns=time.monotonic_ns(), rss_kb=rss_kb())
done = [False] * n
deadline = time.monotonic() + timeout_s
while not all(done) and time.monotonic() < deadline:
    for i, (_, _, w, r) in enumerate(ends):
        if not done[i] and w.get_publication_matched_status().current_count >= expected \
                and r.get_subscription_matched_status().current_count >= expected:
            done[i] = True
            say(event="matched", i=i, t_ns=time.monotonic_ns())
    time.sleep(0.0005)
if all(done):
    say(event="all_matched", t_ns=time.monotonic_ns(), rss_kb=rss_kb())
else:
    say(event="timeout", matched=sum(done))
sys.stdin.read()
