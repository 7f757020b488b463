"""The daemon's socket protocol as a hostile local user speaks it (Sources/KeychainProtocol).

A frame is a big-endian u32 payload length and the payload. A request payload is u16 version,
u8 operation, three attribute records (query, changes, options), u8 secret count and each
secret as u32 length + bytes. A record is u16 count, then per entry u8 name length, name, u8 tag
and the value (1 string / 2 data: u32 length + bytes, 3 number: i64, 4 bool: u8).

The attackers talk to the test over standard input and output, one line at a time.
"""
import errno
import os
import select
import socket
import struct
import sys
import time

VERSION = 1
OP_UNLOCK = 2
OP_COPY_MATCHING = 6
OP_USE_KEY = 23


def record(attributes):
    out = struct.pack(">H", len(attributes))
    for name in sorted(attributes):
        value = attributes[name]
        out += struct.pack(">B", len(name)) + name.encode()
        if isinstance(value, bool):
            out += struct.pack(">BB", 4, 1 if value else 0)
        elif isinstance(value, int):
            out += struct.pack(">Bq", 3, value)
        elif isinstance(value, bytes):
            out += struct.pack(">BI", 2, len(value)) + value
        else:
            raw = value.encode()
            out += struct.pack(">BI", 1, len(raw)) + raw
    return out


def request(operation, query=None, secrets=(), options=None):
    body = struct.pack(">HB", VERSION, operation) + record(query or {}) + record({}) + record(options or {})
    body += struct.pack(">B", len(secrets))
    for s in secrets:
        body += struct.pack(">I", len(s)) + s
    return frame(body)


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def response_status(payload):
    """The i32 status of a response payload (after its u16 version)."""
    return struct.unpack(">i", payload[2:6])[0]


def connect(path, patience=2.0):
    """A connected socket, or None when the daemon does not take one within `patience` s.

    A full listen backlog answers a non-blocking connect with EAGAIN at once: retry until then.
    """
    deadline = time.monotonic() + patience
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
            return s
        except BlockingIOError:
            s.close()
        except OSError:
            s.close()
            return None
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)


def connect_many(path, count):
    """Up to `count` connections; stops at the first the daemon does not take."""
    out = []
    for _ in range(count):
        s = connect(path)
        if s is None:
            break
        out.append(s)
    return out


def send_all(s, data, patience):
    """Sends `data` on a non-blocking socket; False when the peer is gone or too slow."""
    deadline = time.monotonic() + patience
    view = memoryview(data)
    while view:
        try:
            n = s.send(view)
            view = view[n:]
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            select.select([], [s], [], 0.05)
        except OSError:
            return False
    return True


def read_frame(s, patience):
    """('reply', payload), ('closed', bytes so far) or ('timeout', bytes so far)."""
    deadline = time.monotonic() + patience
    got = b""
    need = 4
    while len(got) < need:
        left = deadline - time.monotonic()
        if left <= 0:
            return ("timeout", got)
        r, _, _ = select.select([s], [], [], left)
        if not r:
            continue
        try:
            chunk = s.recv(need - len(got))
        except BlockingIOError:
            continue
        except OSError:
            return ("closed", got)
        if not chunk:
            return ("closed", got)
        got += chunk
        if len(got) == 4 and need == 4:
            need = 4 + struct.unpack(">I", got)[0]
    return ("reply", got[4:])


def peer_closed(s):
    """True when the daemon closed `s` (end of stream or reset); never blocks."""
    try:
        data = s.recv(4096, socket.MSG_DONTWAIT)
        return data == b""
    except BlockingIOError:
        return False
    except OSError as e:
        return e.errno in (errno.ECONNRESET, errno.EPIPE, errno.ENOTCONN)


def say(*words):
    print(*words, flush=True)


def wait_for(word):
    """Blocks until the test writes `word` on a line (or closes standard input)."""
    for line in sys.stdin:
        if line.strip() == word:
            return


def close_all(sockets):
    for s in sockets:
        try:
            s.close()
        except OSError:
            pass


def raise_file_limit():
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard
