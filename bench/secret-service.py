#!/usr/bin/python3
"""The phases of bench/secret-service.sh, each run inside its own `dbus-run-session`.

  secret-service.py adds KC N [--rescan]
      starts `KC secret-service` (with KEYCHAINFS_SECRET_SERVICE_RESCAN=1 when --rescan), a
      client that has called it and listens, then adds N generic passwords through the CLI
      (`KC add-generic-password`, one process each); prints the seconds the adds took, the
      seconds until the listener had every ItemCreated, and the provider's CPU seconds.
  secret-service.py lookups keychainfs KC N SECONDS LOOKUP
  secret-service.py lookups gnome-keyring - N SECONDS LOOKUP
      starts the provider (keychainfs) or `gnome-keyring-daemon --foreground --unlock
      --components=secrets` (a new login keyring in the scratch HOME), fills N items and
      service=bench account=secret over D-Bus (secretstorage), then times `secret-tool lookup`
      per invocation and runs LOOKUP (bench/secretlookup.c) for SECONDS.

Output: `key=value` lines on stdout (read by bench/secret-service.sh), notes on stderr.
"""
import os
import statistics
import subprocess
import sys
import threading
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.bus_messages import MatchRule, message_bus
from jeepney.io.blocking import open_dbus_connection

SECRET = "0123456789abcdef0123456789ABCDEF"


def note(text):
    print(text, file=sys.stderr, flush=True)


def wait_for_name(seconds=30):
    c = open_dbus_connection(bus="SESSION")
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            reply = c.send_and_get_reply(message_bus.NameHasOwner("org.freedesktop.secrets"))
            if reply.body[0]:
                return
            time.sleep(0.05)
        raise SystemExit("nothing owns org.freedesktop.secrets")
    finally:
        c.close()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_provider(kc, rescan=False):
    env = dict(os.environ)
    env.pop("KEYCHAINFS_SECRET_SERVICE_RESCAN", None)
    if rescan:
        env["KEYCHAINFS_SECRET_SERVICE_RESCAN"] = "1"
    p = subprocess.Popen([kc, "secret-service"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    wait_for_name()
    return p


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def adds(kc, n, rescan):
    provider = start_provider(kc, rescan)
    try:
        c = open_dbus_connection(bus="SESSION")
        c.send_and_get_reply(message_bus.AddMatch(MatchRule(type="signal", sender="org.freedesktop.secrets")))
        props = DBusAddress("/org/freedesktop/secrets", "org.freedesktop.secrets", "org.freedesktop.DBus.Properties")
        # A call: from now on the provider sends this connection its signals.
        c.send_and_get_reply(new_method_call(props, "Get", "ss", ("org.freedesktop.Secret.Service", "Collections")))
        service = f"outside-{os.getpid()}"
        done = {}

        def add_all():
            for i in range(n):
                subprocess.run([kc, "add-generic-password", "-s", service, "-a", f"a{i}", "-w", "-"],
                               input=b"x\n", stdout=subprocess.DEVNULL, check=True)
            done["adds"] = time.monotonic()

        cpu0 = cpu_seconds(provider.pid)
        start = time.monotonic()
        adder = threading.Thread(target=add_all)
        adder.start()
        seen = set()
        deadline = start + 1800
        while len(seen) < n and time.monotonic() < deadline:
            try:
                m = c.receive(timeout=1)
            except TimeoutError:
                continue
            if m.header.message_type == MessageType.signal and m.header.fields.get(HeaderFields.member) == "ItemCreated":
                seen.add(m.body[0])
        learnt = time.monotonic()
        adder.join()
        cpu = cpu_seconds(provider.pid) - cpu0
        if len(seen) < n:
            raise SystemExit(f"only {len(seen)} of {n} ItemCreated signals arrived")
        print(f"adds_s={done['adds'] - start:.3f}")
        print(f"learnt_s={learnt - start:.3f}")
        print(f"after_last_add_s={max(0.0, learnt - done['adds']):.3f}")
        print(f"provider_cpu_s={cpu:.3f}")
        c.close()
    finally:
        stop(provider)


def lookups(kind, kc, n, seconds, lookup):
    import secretstorage

    server = None
    if kind == "keychainfs":
        server = start_provider(kc)
    else:
        # A new login keyring, created and unlocked with this password (read from stdin).
        server = subprocess.Popen(["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server.stdin.write(b"bench pass phrase\n")
        server.stdin.close()
        wait_for_name()
    try:
        conn = secretstorage.dbus_init()
        if kind == "keychainfs":
            col = secretstorage.get_default_collection(conn)
        else:
            col = secretstorage.Collection(conn, "/org/freedesktop/secrets/collection/login")
            deadline = time.monotonic() + 30
            while col.is_locked() and time.monotonic() < deadline:
                time.sleep(0.1)
        if col.is_locked():
            raise SystemExit(f"{kind}: the collection is locked")
        t0 = time.monotonic()
        for i in range(n):
            col.create_item(f"fill {i}", {"service": "fill", "account": f"a{i}"}, b"filler secret")
        col.create_item("bench", {"service": "bench", "account": "secret"}, SECRET.encode())
        print(f"fill_s={time.monotonic() - t0:.3f}")
        print(f"items={len(list(col.get_all_items()))}")
        argv = ["secret-tool", "lookup", "service", "bench", "account", "secret"]
        if subprocess.run(argv, capture_output=True).stdout.decode() != SECRET:
            raise SystemExit(f"{kind}: secret-tool lookup does not return the secret")
        times = []
        for i in range(105):
            t = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
            if i >= 5:
                times.append(time.perf_counter() - t)
        print(f"secret_tool_median_ms={statistics.median(times) * 1000:.2f}")
        print(f"secret_tool_mean_ms={statistics.mean(times) * 1000:.2f}")
        out = subprocess.run([lookup, "bench", "secret", SECRET, str(seconds)], capture_output=True, check=True).stdout.decode()
        for field in out.split():
            key, value = field.split("=")
            print(f"libsecret_{key}={value}")
        conn.close()
    finally:
        stop(server)


def main(argv):
    if len(argv) >= 3 and argv[0] == "adds":
        adds(argv[1], int(argv[2]), "--rescan" in argv[3:])
    elif len(argv) == 6 and argv[0] == "lookups":
        lookups(argv[1], argv[2], int(argv[3]), float(argv[4]), argv[5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
