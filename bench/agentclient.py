#!/usr/bin/python3
"""An SSH agent client for bench/ssh-agent.sh: signatures per second through any agent.

Speaks the agent protocol (draft-miller-ssh-agent) itself, standard library only, so the same
client measures `keychainfs ssh-agent` and OpenSSH's `ssh-agent`:

  agentclient.py list SOCKET
      the identities the agent offers, one a line: KEYTYPE BASE64-BLOB COMMENT
  agentclient.py sign SOCKET PUBFILE [--seconds S] [--clients N] [--flags F]
      N processes (multiprocessing), each with a connection of its own, send
      SSH_AGENTC_SIGN_REQUEST for the key of PUBFILE (an authorized_keys line, as
      `ssh-keygen` writes KEY.pub) over a fresh 32-byte random payload, one at a time, for S
      seconds; every reply must be SSH_AGENT_SIGN_RESPONSE holding a signature of the key's
      type, else it counts as an error. Prints one line:
      rate=SIG/S ops=N errors=N clients=N seconds=S median_us=US p99_us=US
      (latency percentiles over every request of every client). Exits 1 when any request
      failed or no signature was made.
"""
import argparse
import base64
import multiprocessing
import os
import socket
import struct
import sys
import time

REQUEST_IDENTITIES = 11
IDENTITIES_ANSWER = 12
SIGN_REQUEST = 13
SIGN_RESPONSE = 14
FAILURE = 5


def string(b):
    return struct.pack(">I", len(b)) + b


def read_exact(sock, n):
    parts = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("the agent closed the connection")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def transact(sock, message):
    """Sends one framed message, returns the reply's body (type byte first)."""
    sock.sendall(struct.pack(">I", len(message)) + message)
    (length,) = struct.unpack(">I", read_exact(sock, 4))
    if length == 0 or length > 256 * 1024:
        raise ConnectionError("reply length %d" % length)
    return read_exact(sock, length)


class Reader:
    def __init__(self, data, offset=0):
        self.data = data
        self.offset = offset

    def uint32(self):
        if self.offset + 4 > len(self.data):
            raise ValueError("truncated uint32")
        (v,) = struct.unpack_from(">I", self.data, self.offset)
        self.offset += 4
        return v

    def string(self):
        n = self.uint32()
        if self.offset + n > len(self.data):
            raise ValueError("truncated string")
        v = self.data[self.offset:self.offset + n]
        self.offset += n
        return v

    def done(self):
        return self.offset == len(self.data)


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def identities(path):
    with connect(path) as s:
        reply = transact(s, bytes([REQUEST_IDENTITIES]))
    if reply[0] != IDENTITIES_ANSWER:
        raise RuntimeError("REQUEST_IDENTITIES answered with message %d" % reply[0])
    r = Reader(reply, 1)
    keys = []
    for _ in range(r.uint32()):
        blob = r.string()
        comment = r.string()
        keys.append((blob, comment))
    if not r.done():
        raise RuntimeError("bytes after the identities")
    return keys


def key_blob(pubfile):
    with open(pubfile) as f:
        fields = f.read().split()
    if len(fields) < 2:
        raise SystemExit("agentclient.py: %s is not a public key line" % pubfile)
    blob = base64.b64decode(fields[1])
    key_type = Reader(blob).string()
    if key_type.decode() != fields[0]:
        raise SystemExit("agentclient.py: %s: the blob's type is %s" % (pubfile, key_type.decode()))
    return blob, key_type


def sign_signature_type(key_type, flags):
    if key_type == b"ssh-rsa":
        return b"rsa-sha2-512" if flags & 4 else b"rsa-sha2-256" if flags & 2 else b"ssh-rsa"
    return key_type


def worker(path, blob, sig_type, flags, seconds, barrier, results):
    """One client: its own connection, requests one at a time until its deadline."""
    ops = errors = 0
    latencies = []
    first_error = ""
    try:
        sock = connect(path)
    except OSError as e:
        barrier.wait()
        results.put((0, 1, 0.0, [], "connect: %s" % e))
        return
    head = bytes([SIGN_REQUEST]) + string(blob)
    tail = struct.pack(">I", flags)
    barrier.wait()
    clock = time.perf_counter
    start = clock()
    deadline = start + seconds
    now = start
    while now < deadline:
        message = head + string(os.urandom(32)) + tail
        try:
            reply = transact(sock, message)
        except (OSError, ConnectionError) as e:
            errors += 1
            first_error = first_error or "request %d: %s" % (ops + errors, e)
            break   # the stream cannot be followed past a broken frame
        after = clock()
        latencies.append(after - now)
        now = after
        ok = False
        if reply[0] == SIGN_RESPONSE:
            try:
                r = Reader(reply, 1)
                sig = Reader(r.string())
                ok = r.done() and sig.string() == sig_type and len(sig.string()) > 0 and sig.done()
            except ValueError:
                ok = False
        if ok:
            ops += 1
        else:
            errors += 1
            if not first_error:
                first_error = "request %d: reply message %d (%d bytes)" % (ops + errors, reply[0], len(reply))
    elapsed = clock() - start
    sock.close()
    latencies.sort()
    # A sample keeps the queue small; percentiles come from every client's sample.
    step = max(1, len(latencies) // 20000)
    results.put((ops, errors, elapsed, latencies[::step], first_error))


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    i = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[i]


def sign(args):
    blob, key_type = key_blob(args.pubfile)
    if blob not in [b for b, _ in identities(args.socket)]:
        print("agentclient.py: the agent at %s does not offer %s" % (args.socket, args.pubfile), file=sys.stderr)
        return 1
    sig_type = sign_signature_type(key_type, args.flags)
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(args.clients)
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(args.socket, blob, sig_type, args.flags, args.seconds, barrier, results))
             for _ in range(args.clients)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=args.seconds + 60) for _ in procs]
    except Exception:   # queue.Empty: a client died without a result
        for p in procs:
            p.kill()
        print("agentclient.py: a client gave no result", file=sys.stderr)
        return 1
    for p in procs:
        p.join()
    ops = sum(g[0] for g in got)
    errors = sum(g[1] for g in got)
    # Each client's rate over its own time, summed: the clients run side by side.
    rate = sum(g[0] / g[2] for g in got if g[2] > 0)
    lat = sorted(x for g in got for x in g[3])
    print("rate=%.1f ops=%d errors=%d clients=%d seconds=%g median_us=%.1f p99_us=%.1f"
          % (rate, ops, errors, args.clients, args.seconds, percentile(lat, 50) * 1e6, percentile(lat, 99) * 1e6))
    for g in got:
        if g[4]:
            print("agentclient.py: %s" % g[4], file=sys.stderr)
    return 1 if errors or not ops else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list")
    p.add_argument("socket")
    p = sub.add_parser("sign")
    p.add_argument("socket")
    p.add_argument("pubfile")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--flags", type=int, default=0)
    args = parser.parse_args()
    if args.command == "list":
        for blob, comment in identities(args.socket):
            print(Reader(blob).string().decode(), base64.b64encode(blob).decode(), comment.decode(errors="replace"))
        return 0
    if args.clients < 1 or args.seconds <= 0:
        parser.error("--clients and --seconds take positive numbers")
    return sign(args)


if __name__ == "__main__":
    sys.exit(main())
