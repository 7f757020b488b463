"""Locked memory by slow large frames (issue 13, attack 4).

usage: slow_frames.py SOCKET CONNECTIONS ANNOUNCED SEND SECONDS

Each connection announces a frame of ANNOUNCED bytes, then sends SEND bytes of it, spread evenly
over SECONDS, and never the rest. A connection the daemon closes or stops reading is left be.

Lines out: `sent MiB,MiB,...` once the time is up; the connections stay open until `close`.
"""
import select
import struct
import sys
import time

import wire

path, count, announced, total, seconds = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                          int(sys.argv[4]), float(sys.argv[5]))
conns = wire.connect_many(path, count)
sent = {s: 0 for s in conns}
alive = set()
for s in conns:
    if wire.send_all(s, struct.pack(">I", announced), 1):
        alive.add(s)
chunk = bytes(64 << 10)
start = time.monotonic()
while alive and time.monotonic() - start < seconds:
    due = min(total, int(total * (time.monotonic() - start) / seconds) + len(chunk))
    behind = [s for s in alive if sent[s] < due]
    if not behind:
        time.sleep(0.01)
        continue
    _, writable, _ = select.select([], behind, [], 0.05)
    for s in writable:
        try:
            sent[s] += s.send(chunk[:due - sent[s]])
        except BlockingIOError:
            pass
        except OSError:
            alive.discard(s)
wire.say("sent", ",".join("%.1f" % (sent[s] / (1 << 20)) for s in conns))
wire.wait_for("close")
wire.close_all(conns)
