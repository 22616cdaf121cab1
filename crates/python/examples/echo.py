#!/usr/bin/env python3
"""A detpath echo server in Python: every datagram goes back to its sender.

    python3 echo.py 'afxdp://eth1?port=7000' [--count N] [--blocking]

Prints "echo on IP:PORT (CAPABILITIES)" once ready and the counters when it
stops (after N datagrams, or on Ctrl-C / SIGTERM). The loop is what
crates/capi/examples/boundary_rtt.rs measures against the Rust and C ones.
"""

import argparse
import signal
import sys

import detpath


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("spec")
    p.add_argument("--count", type=int, default=0, help="stop after N datagrams (0: run until stopped)")
    p.add_argument("--blocking", action="store_true", help="sleep in the kernel while waiting")
    args = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        ep = detpath.open(args.spec)
    except detpath.Error as e:
        print(f"echo.py: {e}", file=sys.stderr)
        return 1
    with ep:
        ip, port = ep.local_addr
        print(f"echo on {ip}:{port} ({ep.capabilities()['summary']})", flush=True)
        busy = not args.blocking
        echoed = 0
        try:
            while args.count == 0 or echoed < args.count:
                got = ep.recv(timeout=0.1, busy=busy)
                if got is not None:
                    ep.send_to(got[0], got[1])
                    echoed += 1
        except KeyboardInterrupt:
            pass
        finally:
            print(f"echoed {echoed}; counters {ep.counters()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
