"""A descriptor passed with a ping (issue 26).

usage: pass_fd.py SOCKET FILE

Opens FILE (a file of a hangfs mount: its FLUSH never answers another user), takes a shared
flock on it, connects and sends a ping with the descriptor attached (SCM_RIGHTS), then closes
its own copy, so the daemon's would be the last.

Lines out: `sent` or `refused ERRNO-NAME` (the kernel would not carry the descriptor), then
`reply STATUS`, `closed` or `timeout` for the ping. Everything stays open until `close`.
"""
import errno
import fcntl
import os
import socket
import sys

import wire

OP_PING = 1

path, target = sys.argv[1], sys.argv[2]
fd = os.open(target, os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)
s = wire.connect(path)
if s is None:
    wire.say("closed")
    wire.wait_for("close")
    sys.exit(0)
s.setblocking(True)
ping = wire.request(OP_PING)
try:
    socket.send_fds(s, [ping], [fd])
    wire.say("sent")
except OSError as e:
    wire.say("refused", errno.errorcode.get(e.errno, str(e.errno)))
    # The same ping without the descriptor: the connection itself still works.
    wire.send_all(s, ping, 2)
os.close(fd)  # answered: hangfs answers its own user
s.setblocking(False)
kind, payload = wire.read_frame(s, 5)
if kind == "reply":
    wire.say("reply", wire.response_status(payload))
else:
    wire.say(kind)
wire.wait_for("close")
wire.close_all([s])
