"""Unauthenticated mappings by opens through a mount (issue 13, attack 2).

usage: open_flood.py FILE COUNT

Opens FILE COUNT times and keeps every descriptor open; on `close`, closes them all.

Lines out: `opened N errno E` (E 0 when all opened), then `closed`.
"""
import os
import sys

import wire

path, count = sys.argv[1], int(sys.argv[2])
wire.raise_file_limit()
fds = []
failure = 0
for _ in range(count):
    try:
        fds.append(os.open(path, os.O_RDONLY))
    except OSError as e:
        failure = e.errno
        break
wire.say("opened", len(fds), "errno", failure)
wire.wait_for("close")
for fd in fds:
    try:
        os.close(fd)
    except OSError:
        pass
wire.say("closed")
wire.wait_for("quit")
