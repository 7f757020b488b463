"""Idle and stalled connections (issue 13, attack 3).

usage: idle_flood.py SOCKET COUNT idle|partial SECONDS

Opens COUNT connections. `idle` sends nothing; `partial` sends the first byte of a frame header
on each and stalls, then watches for SECONDS for the daemon to close them.

Lines out: `ready N`; for `partial` then `eof K of N after T` (T: seconds until the last one
closed, or until the watch ended). The connections stay open until `close`.
"""
import select
import sys
import time

import wire

path, count, mode, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
conns = wire.connect_many(path, count)
if mode == "partial":
    for s in conns:
        wire.send_all(s, b"\x00", 1)
wire.say("ready", len(conns))
if mode == "partial":
    start = time.monotonic()
    open_ = set(conns)
    last = 0.0
    while open_ and time.monotonic() - start < seconds:
        ready, _, _ = select.select(list(open_), [], [], 0.2)
        for s in ready:
            if wire.peer_closed(s):
                open_.discard(s)
                last = time.monotonic() - start
    elapsed = last if not open_ else time.monotonic() - start
    wire.say("eof", len(conns) - len(open_), "of", len(conns), "after", "%.1f" % elapsed)
wire.wait_for("close")
wire.close_all(conns)
