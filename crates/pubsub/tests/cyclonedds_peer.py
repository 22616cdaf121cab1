#!/usr/bin/env python3
"""CycloneDDS 11 (cyclonedds-python, PyPI `cyclonedds`) as a test peer with
types of our choosing, for the keyed-topic interop tests (tests/cyclonedds.rs).

    cyclonedds_peer.py sub|pub --type long|name --topic T [--domain D] [--depth N]
                               [--hold S] [--keys K] [--rounds R] [--duration S]
                               [--durability volatile|transient-local] [--write-first]

Unicast discovery comes from CYCLONEDDS_URI (the test writes it). Everything
the peer sees or does is one JSON object per line on stdout, flushed at once:

    {"ev": "ready"}                        the participant exists (discovery starts)
    {"ev": "matched", "ms": 123}           a remote endpoint matched ours (ms since start)
    {"ev": "sample", "key": ..., "kh": "hex", "seq": n, "valid": true, "state": "alive"|"disposed"|"no_writers"}
                                           kh: the key hash as computed here from cyclonedds-python's key serializer
    {"ev": "taken", "n": n}                sub: the held-back take (after --hold) returned n samples
    {"ev": "wrote", "n": n, "acked": b, "kh": [...]}
                                           pub: every round written (and acknowledged by every
                                           reader: b); the key hash of each instance
    {"ev": "disposed"|"unregistered", "key": ...}

sub: a reliable KEEP_LAST --depth reader; takes nothing for --hold seconds
after matching or until `take` comes on stdin (so KEEP_LAST per instance
shows), then takes all and keeps taking. pub: a reliable KEEP_LAST --depth writer; after matching, --rounds
rounds over --keys instances (seq = round * 100 + key index), then reads
commands from stdin, one a line: `dispose I`, `unregister I`, `write I SEQ`.
Either ends after --duration seconds. --durability: both endpoints' (default
volatile); pub --write-first: the rounds are written before any reader
matched (a transient-local writer keeps them for late joiners), then the
writer waits for a match and its acknowledgements.
"""

import argparse
import hashlib
import json
import queue
import sys
import threading
import time
from dataclasses import dataclass

try:
    from cyclonedds.core import InstanceState, Qos, Policy
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.idl import Endianness, IdlStruct
    from cyclonedds.idl.annotations import key
    from cyclonedds.idl.types import int32
    from cyclonedds.pub import DataWriter
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from cyclonedds.util import duration
except ImportError as e:  # the Rust test turns this line into its failure message
    print(json.dumps({"ev": "missing", "what": f"python package cyclonedds ({e}); run `make deps`"}), flush=True)
    sys.exit(3)


@dataclass
class KeyedLong(IdlStruct, typename="detpath::KeyedLong"):
    """Key: one long (4 bytes serialized: the key hash is the key, zero-padded)."""

    id: int32
    key("id")
    seq: int32


@dataclass
class KeyedName(IdlStruct, typename="detpath::KeyedName"):
    """Key: a long and an unbounded string (no bound on the serialized key: MD5 key hash)."""

    site: int32
    key("site")
    name: str
    key("name")
    seq: int32


def make(kind, i, seq):
    if kind == "long":
        return KeyedLong(id=1000 + i, seq=seq)
    return KeyedName(site=i, name=f"instance-{i}-of-detpath-interop", seq=seq)


def key_hash(kind, s):
    """RTPS §9.6.3.8 from cyclonedds-python's own key serializer (big-endian
    XCDR2, header cut off): the long key padded, the unbounded one's MD5."""
    k = s.serialize_key(endianness=Endianness.Big, use_version_2=True)[4:]
    return (k.ljust(16, b"\0") if kind == "long" else hashlib.md5(k).digest()).hex()


def key_of(kind, s):
    if kind == "long":
        return s.id
    return [s.site, s.name]


STATES = {InstanceState.Alive: "alive", InstanceState.NotAliveDisposed: "disposed", InstanceState.NotAliveNoWriters: "no_writers"}


def out(**kv):
    print(json.dumps(kv), flush=True)


def wait_matched(count, t0, end):
    """Waits until count() > 0 or the end; says matched (with the ms it took) or unmatched."""
    while count() == 0 and time.monotonic() < end:
        time.sleep(0.005)
    if count() == 0:
        out(ev="unmatched")
        return False
    out(ev="matched", ms=round((time.monotonic() - t0) * 1000))
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("role", choices=["pub", "sub"])
    ap.add_argument("--type", choices=["long", "name"], required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--domain", type=int, default=0)
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--hold", type=float, default=0.0)
    ap.add_argument("--keys", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--durability", choices=["volatile", "transient-local"], default="volatile")
    ap.add_argument("--write-first", action="store_true")
    a = ap.parse_args()
    t0 = time.monotonic()
    ty = KeyedLong if a.type == "long" else KeyedName
    dur = Policy.Durability.TransientLocal if a.durability == "transient-local" else Policy.Durability.Volatile
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(a.depth), dur)
    dp = DomainParticipant(a.domain)
    topic = Topic(dp, a.topic, ty, qos=qos)
    out(ev="ready")
    end = t0 + a.duration
    # A thread reads the commands: select() on stdin would miss lines already in Python's buffer.
    commands = queue.Queue()
    threading.Thread(target=lambda: [commands.put(line) for line in sys.stdin], daemon=True).start()
    if a.role == "sub":
        rd = DataReader(dp, topic, qos=qos)
        if not wait_matched(lambda: rd.get_subscription_matched_status().current_count, t0, end):
            return
        try:
            commands.get(timeout=a.hold)  # "take" on stdin ends the hold early
        except queue.Empty:
            pass
        first = True
        while time.monotonic() < end:
            got = rd.take(N=256)
            for s in got:
                info = s.sample_info
                k = key_of(a.type, s.key_sample if not info.valid_data else s)
                seq = s.seq if info.valid_data else None
                kh = key_hash(a.type, s.key_sample if not info.valid_data else s)
                out(ev="sample", key=k, kh=kh, seq=seq, valid=info.valid_data, state=STATES.get(info.instance_state, str(info.instance_state)))
            if first:
                out(ev="taken", n=len(got))
                first = False
            time.sleep(0.01)
    else:
        # unregister_instance then says "no writers" (CycloneDDS's default also disposes).
        # CycloneDDS keeps for late joiners what DURABILITY_SERVICE's history
        # says (default KEEP_LAST 1), not the writer's HISTORY: the same depth.
        keep = Policy.DurabilityService(0, Policy.History.KeepLast(a.depth), -1, -1, -1)
        wqos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepLast(a.depth), Policy.WriterDataLifecycle(autodispose=False), dur, keep)
        wr = DataWriter(dp, topic, qos=wqos)
        if not a.write_first and not wait_matched(lambda: wr.get_publication_matched_status().current_count, t0, end):
            return
        for r in range(a.rounds):
            for i in range(a.keys):
                wr.write(make(a.type, i, r * 100 + i))
        if a.write_first:
            out(ev="written", n=a.rounds * a.keys)
            if not wait_matched(lambda: wr.get_publication_matched_status().current_count, t0, end):
                return
        acked = wr.wait_for_acks(duration(seconds=10))
        out(ev="wrote", n=a.rounds * a.keys, acked=acked, kh=[key_hash(a.type, make(a.type, i, 0)) for i in range(a.keys)])
        while time.monotonic() < end:
            try:
                line = commands.get(timeout=0.05)
            except queue.Empty:
                continue
            cmd = line.split()
            if not cmd:
                continue
            i = int(cmd[1])
            if cmd[0] == "dispose":
                wr.dispose(make(a.type, i, 0))
                out(ev="disposed", key=key_of(a.type, make(a.type, i, 0)))
            elif cmd[0] == "unregister":
                wr.unregister_instance(make(a.type, i, 0))
                out(ev="unregistered", key=key_of(a.type, make(a.type, i, 0)))
            elif cmd[0] == "write":
                wr.write(make(a.type, i, int(cmd[2])))
                out(ev="wrote", n=1)


if __name__ == "__main__":
    main()
