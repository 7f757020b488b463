#!/usr/bin/env python3
"""Turns bench/run.sh's figures into the printed results table, docs/performance.md and the
read-latency plot. Run by bench/run.sh with Debian's python3 (python3-matplotlib).

  report.py --results FILE --inproc FILE [--doc MD --plot PNG [--scale-plot PNG] [--analysis MD]]
"""
import argparse
import os
import re
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--results", required=True)
ap.add_argument("--inproc", required=True)
ap.add_argument("--doc")
ap.add_argument("--plot")
ap.add_argument("--scale-plot")
ap.add_argument("--analysis")
args = ap.parse_args()

r = {}
for line in open(args.results):
    line = line.rstrip("\n")
    if "=" in line:
        k, v = line.split("=", 1)
        r[k] = v


def num(key):
    try:
        return float(r[key])
    except (KeyError, ValueError):
        return float("nan")


def us(x):
    if x != x:
        return "-"
    return f"{x:.1f} us" if x < 100 else f"{x:.0f} us"


def ms(x):
    if x != x:
        return "-"
    if x >= 1000:
        return f"{x / 1000:.2f} s"
    return f"{x:.1f} ms" if x >= 10 else f"{x:.2f} ms"


def rate(x):
    return "-" if x != x else f"{x:,.0f}/s"


def ratio(a, b):
    if a != a or b != b or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def grouped(n):
    return "-" if n != n else f"{int(n):,}"


def inum(key):
    x = num(key)
    return int(x) if x == x else 0


have_main = "vault_items" in r  # not with --scale-only
big = inum("big_items")
small = inum("known_small")
mid = big // 2

# ------------------------------------------------------------------ in-process figures
inproc_text = open(args.inproc).read() if os.path.exists(args.inproc) else ""
inproc_tables = []
block = []
for line in inproc_text.splitlines():
    if line.startswith("|"):
        block.append(line)
    elif block:
        inproc_tables.append(block)
        block = []
if block:
    inproc_tables.append(block)
inproc_find = {}
if inproc_tables:
    header = [c.strip() for c in inproc_tables[0][0].strip("|").split("|")]
    for row in inproc_tables[0][2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        d = dict(zip(header, cells))
        try:
            inproc_find[int(d["items"].replace(",", ""))] = float(d["find/s"].replace(",", ""))
        except (KeyError, ValueError):
            pass
inproc_largest = max(inproc_find) if inproc_find else None
inproc_rate = inproc_find[inproc_largest] if inproc_largest else float("nan")

# ------------------------------------------------------------------ the main table
read_minfs = num("read.minfs.median_us")
read_kcfs = num("read.kcfs.median_us")
headline = read_kcfs / read_minfs if read_minfs == read_minfs and read_minfs > 0 else float("nan")
target_met = headline == headline and headline <= 1.3


def verdict(ok):
    return "met" if ok else "NOT met"


rows = []  # figure, value, baseline, ratio, target
wide = inum("wide_items")
per_service = inum("per_service") or 1
items_total = inum("vault_items")
rows.append(("open+read+close, keychainfs default (median)", us(read_kcfs),
             f"minfs {us(read_minfs)}", ratio(read_kcfs, read_minfs), f"<= 1.3x: {verdict(target_met)}"))
repeat_ratios = []
for i in range(1, 100):
    m, k = num(f"read_repeat.{i}.minfs.median_us"), num(f"read_repeat.{i}.kcfs.median_us")
    if m != m or k != k or m <= 0:
        break
    repeat_ratios.append(k / m)
repeat_ratios.sort()
repeat_median = (repeat_ratios[len(repeat_ratios) // 2] if len(repeat_ratios) % 2
                 else sum(repeat_ratios[len(repeat_ratios) // 2 - 1:len(repeat_ratios) // 2 + 1]) / 2) if repeat_ratios else float("nan")
if repeat_ratios:
    rows.append((f"open+read+close, default / minfs, {len(repeat_ratios)} more short runs (median of ratios)",
                 f"{repeat_median:.2f}x", f"range {repeat_ratios[0]:.2f}x - {repeat_ratios[-1]:.2f}x", "",
                 f"<= 1.3x: {verdict(repeat_median <= 1.3)}"))
rows.append(("open+read+close, keychainfs default (p90)", us(num("read.kcfs.p90_us")),
             f"minfs {us(num('read.minfs.p90_us'))}", ratio(num("read.kcfs.p90_us"), num("read.minfs.p90_us")), ""))
rows.append(("open+read+close, keychainfs kernel_cache (median)", us(num("read.kcfs_cache.median_us")),
             f"minfs {us(read_minfs)}", ratio(num("read.kcfs_cache.median_us"), read_minfs), ""))
rows.append(("open+read+close, keychainfs default vs single-threaded minfs", us(read_kcfs),
             f"minfs -s {us(num('read.minfs_single.median_us'))}", ratio(read_kcfs, num("read.minfs_single.median_us")), ""))
rows.append(("open+read+close, minfs answering FLUSH (as keychainfs does)", us(num("read.minfs_flush.median_us")),
             f"minfs {us(read_minfs)}", ratio(num("read.minfs_flush.median_us"), read_minfs), ""))
rows.append(("open+read+close, keychainfs default vs tmpfs", us(read_kcfs),
             f"tmpfs {us(num('read.tmpfs.median_us'))}", ratio(read_kcfs, num("read.tmpfs.median_us")), ""))
rows.append(("server CPU per open+read+close, keychainfs default", us(num("cpu.kcfs.us_per_op")),
             f"minfs {us(num('cpu.minfs.us_per_op'))}", ratio(num("cpu.kcfs.us_per_op"), num("cpu.minfs.us_per_op")), ""))
rows.append((f"open+read+close of big/{r.get('mid_account', '?')} (directory of {grouped(big)})",
             us(num("read.kcfs_big.median_us")), f"bench/secret {us(read_kcfs)}",
             ratio(num("read.kcfs_big.median_us"), read_kcfs), "~1x (no growth with size)"))
rows.append(("stat, keychainfs default (cached entry, median)", us(num("stat.kcfs.median_us")),
             f"tmpfs {us(num('stat.tmpfs.median_us'))}", ratio(num("stat.kcfs.median_us"), num("stat.tmpfs.median_us")),
             "close to tmpfs"))
rows.append(("stat, keychainfs kernel_cache (median)", us(num("stat.kcfs_cache.median_us")),
             f"tmpfs {us(num('stat.tmpfs.median_us'))}", ratio(num("stat.kcfs_cache.median_us"), num("stat.tmpfs.median_us")),
             "close to tmpfs"))
rows.append(("stat, keychainfs default (p90)", us(num("stat.kcfs.p90_us")),
             f"tmpfs {us(num('stat.tmpfs.p90_us'))}", ratio(num("stat.kcfs.p90_us"), num("stat.tmpfs.p90_us")), ""))
# ls -l of the big service: complete within the budget, or projected from the part that was listed.
ls_tmpfs = num("ls.tmpfs.median_us") / 1000
cold_ms = num("ls.kcfs.cold.median_us") / 1000
cold_entries = num("ls.kcfs.cold.entries")
ls_complete = r.get("ls.kcfs.cold.complete") == "1"
if ls_complete:
    rows.append((f"ls -l of {grouped(big)} accounts, cold (readdir + lstat each)", ms(cold_ms),
                 f"tmpfs {ms(ls_tmpfs)}", ratio(cold_ms, ls_tmpfs), f"a few seconds: {verdict(cold_ms <= 5000)}"))
    rows.append((f"ls -l of {grouped(big)} accounts, again (median of 2)", ms(num("ls.kcfs.warm.median_us") / 1000),
                 f"tmpfs {ms(ls_tmpfs)}", ratio(num("ls.kcfs.warm.median_us") / 1000, ls_tmpfs), ""))
    rows.append((f"GNU ls -l of {grouped(big)} accounts", ms(num("ls.kcfs.gnu_ms")),
                 f"tmpfs {ms(num('ls.tmpfs.gnu_ms'))}", ratio(num("ls.kcfs.gnu_ms"), num("ls.tmpfs.gnu_ms")),
                 f"<= 5x tmpfs: {verdict(num('ls.kcfs.gnu_ms') <= 5 * num('ls.tmpfs.gnu_ms'))}"))
    # The floor: a C file system that lists as keychainfs does and answers GETXATTR as it does.
    rows.append((f"GNU ls -l of {grouped(big)} accounts, against the C floor", ms(num("ls.kcfs.gnu_ms")),
                 f"minfs --big {ms(num('ls.minfs_big.gnu_ms'))}", ratio(num("ls.kcfs.gnu_ms"), num("ls.minfs_big.gnu_ms")),
                 "~1x the floor"))
else:
    projected = cold_ms * big / cold_entries if cold_entries > 0 else float("nan")
    rows.append((f"ls -l of {grouped(big)} accounts, cold: PROJECTED from {grouped(cold_entries)} entries in {ms(cold_ms)}",
                 ms(projected), f"tmpfs {ms(ls_tmpfs)}", ratio(projected, ls_tmpfs), "a few seconds: NOT met"))
    rows.append(("ls -l, time per entry (lstat = one FUSE lookup)", us(cold_ms * 1000 / cold_entries if cold_entries else float("nan")),
                 f"tmpfs {us(ls_tmpfs * 1000 / big)}", ratio(cold_ms / cold_entries if cold_entries else float("nan"), ls_tmpfs / big), ""))
rows.append((f"lstat of {grouped(wide)} names in {grouped(wide // per_service)} services of {per_service} (cold)",
             ms(num("know.big.ms")), "", "", ""))
lock0 = num("lock.none.ms")
rows.append(("lock-keychain, ~0 entries known (median of 3)", ms(lock0), "", "", ""))
rows.append((f"lock-keychain, {grouped(small)} entries known (median of 3)", ms(num("lock.small.ms")),
             f"~0 known {ms(lock0)}", ratio(num("lock.small.ms"), lock0), ""))
rows.append((f"lock-keychain, {grouped(wide)} entries known in {grouped(wide // per_service)} services", ms(num("lock.big.ms")),
             f"~0 known {ms(lock0)}", ratio(num("lock.big.ms"), lock0),
             f"< 100 ms at 100,000: {verdict(num('lock.big.ms') < 100)}" if wide >= 100000 else ""))
service_known = inum("know.service.entries")
rows.append((f"lock-keychain, {grouped(service_known)} accounts of one service known (after its ls -l)",
             ms(num("lock.service.ms")), f"~0 known {ms(lock0)}", ratio(num("lock.service.ms"), lock0),
             f"< 100 ms at 100,000: {verdict(num('lock.service.ms') < 100)}" if service_known >= 100000 else ""))
add0 = num("add.none.ms")
rows.append(("add-generic-password, ~0 entries known (median of 3)", ms(add0), "", "", ""))
rows.append((f"add-generic-password, {grouped(small)} entries known (median of 3)", ms(num("add.small.ms")),
             f"~0 known {ms(add0)}", ratio(num("add.small.ms"), add0), ""))
rows.append((f"add-generic-password, {grouped(wide)} entries known", ms(num("add.big.ms")),
             f"~0 known {ms(add0)}", ratio(num("add.big.ms"), add0), ""))
cat = num("cli.cat.median_ms")
cli_how = ("`hyperfine -N` (no shell)" if r.get("cli.tool", "hyperfine") == "hyperfine"
           else "a loop in bash of interleaved rounds timed with EPOCHREALTIME (fork and exec by bash included)")
hello = num("cli.hello.median_ms")
find = num("cli.find.median_ms")
rows.append(("find-generic-password -w per invocation (median)", ms(find),
             f"Swift hello {ms(hello)}", ratio(find, hello), f"within 1.3x of the hello: {verdict(find <= 1.3 * hello)}"))
rows.append(("cat of the same secret through the mount, per invocation (median)", ms(num("cli.cat_mount.median_ms")),
             f"find -w {ms(find)}", ratio(num("cli.cat_mount.median_ms"), find), ""))
rows.append(("keychainfs help per invocation (process start, no daemon)", ms(num("cli.help.median_ms")),
             f"Swift hello {ms(num('cli.hello.median_ms'))}", ratio(num("cli.help.median_ms"), num("cli.hello.median_ms")), ""))
rows.append(("Swift hello world, stdlib only (process start floor)", ms(num("cli.hello.median_ms")),
             f"cat {ms(cat)}", ratio(num("cli.hello.median_ms"), cat), ""))
rows.append(("Swift hello world, runtime linked in (-static-stdlib, as keychainfs)", ms(num("cli.hello_static.median_ms")),
             f"find -w {ms(find)}", ratio(num("cli.hello_static.median_ms"), find), ""))
inproc_label = f"in-process find at {grouped(inproc_largest)}" if inproc_largest else "in-process find"
vs_inproc = f"{inproc_label} {rate(inproc_rate)}"
floor1, floor8 = num("floor.socket.c1.rate"), num("floor.socket.c8.rate")
def rate_range(key):
    lo, _, hi = r.get(key, "").partition("-")
    try:
        return f" ({rate(float(lo))}-{rate(float(hi))})"
    except ValueError:
        return ""
rows.append(("socket lookups (copyMatching r_Data), 1 client, median of 3" + rate_range("socket.c1.rate_range"), rate(num("socket.c1.rate")),
             f"sockfloor, 1 client {rate(floor1)}{rate_range('floor.socket.c1.rate_range')}", ratio(num("socket.c1.rate"), floor1),
             f">= 0.7x the floor: {verdict(num('socket.c1.rate') >= 0.7 * floor1)}"))
rows.append(("socket lookups, 8 clients (total), median of 3" + rate_range("socket.c8.rate_range"), rate(num("socket.c8.rate")),
             f"sockfloor, 8 clients {rate(floor8)}{rate_range('floor.socket.c8.rate_range')}", ratio(num("socket.c8.rate"), floor8),
             f">= 0.5x the floor: {verdict(num('socket.c8.rate') >= 0.5 * floor8)}"))
rows.append(("socket lookups, 1 client, against the in-process find", rate(num("socket.c1.rate")),
             vs_inproc, ratio(num("socket.c1.rate"), inproc_rate), ""))
engine_floor = num("floor.engine.10000.rate")
if 10000 in inproc_find:
    rows.append(("in-process find at 10,000 items", rate(inproc_find[10000]), f"C engine floor (enginefloor) {rate(engine_floor)}",
                 ratio(inproc_find[10000], engine_floor), f">= 0.5x the floor: {verdict(inproc_find[10000] >= 0.5 * engine_floor)}"))
for n in ("c1", "c8"):
    rows.append((f"CPU per socket lookup, {n[1:]} client(s): daemon / client", f"{num(f'socket.{n}.daemon_cpu_us_per_op'):.1f} us",
                 f"client {num(f'socket.{n}.client_cpu_us_per_op'):.1f} us", "", ""))
rows.append(("socket lookups, 8 clients / 1 client", ratio(num("socket.c8.rate"), num("socket.c1.rate")),
             f"1 client {rate(num('socket.c1.rate'))}", "", f"> 1.00x: {verdict(num('socket.c8.rate') > num('socket.c1.rate'))}"))
rows.append((f"socket lookups, 1 client, random accounts of big", rate(num("socket.c1_random.rate")),
             f"1 client, bench/secret {rate(num('socket.c1.rate'))}", ratio(num("socket.c1_random.rate"), num("socket.c1.rate")), ""))
rows.append(("socket request latency, 1 client (median)", us(num("socket.c1.median_us")), "", "", ""))
rows.append(("SecItemCopyMatching (ReturnData), 1 thread, median of 3" + rate_range("secitem.t1.rate_range"), rate(num("secitem.t1.rate")),
             vs_inproc, ratio(num("secitem.t1.rate"), inproc_rate), ""))
rows.append(("SecItemCopyMatching (ReturnData), 8 threads (total), median of 3" + rate_range("secitem.t8.rate_range"), rate(num("secitem.t8.rate")),
             vs_inproc, ratio(num("secitem.t8.rate"), inproc_rate),
             f"not slower than 1 thread: {verdict(num('secitem.t8.rate') >= num('secitem.t1.rate'))}"))
rows.append(("SecItemCopyMatching, 8 threads / 1 thread", ratio(num("secitem.t8.rate"), num("secitem.t1.rate")),
             f"1 thread {rate(num('secitem.t1.rate'))}", "",
             f">= 1.5x: {verdict(num('secitem.t8.rate') >= 1.5 * num('secitem.t1.rate'))}"))
if "seckey.daemon_rate" in r:
    ossl = num("seckey.openssl_sign_rate")
    rows.append(("P-256 signatures/s, SecKeyCreateSignature with a stored non-extractable key (daemon)",
                 rate(num("seckey.daemon_rate")), f"openssl speed ecdsap256 {rate(ossl)}", ratio(num("seckey.daemon_rate"), ossl), ""))
    rows.append(("P-256 signatures/s, KeychainKeys in process", rate(num("seckey.inproc_rate")),
                 f"openssl speed ecdsap256 {rate(ossl)}", ratio(num("seckey.inproc_rate"), ossl), ""))
    rows.append(("P-256 signatures/s through the daemon against in process", rate(num("seckey.daemon_rate")),
                 f"in process {rate(num('seckey.inproc_rate'))}", ratio(num("seckey.daemon_rate"), num("seckey.inproc_rate")),
                 f">= 0.5x: {verdict(num('seckey.daemon_rate') >= 0.5 * num('seckey.inproc_rate'))}"))
    if "seckey.floor_daemon_rate" in r:
        floor = num("seckey.floor_daemon_rate")
        rows.append(("P-256 signatures/s, C floor through a daemon against C in process (bench/signfloor.c)", rate(floor),
                     f"in process {rate(num('seckey.floor_inproc_rate'))}", ratio(floor, num("seckey.floor_inproc_rate")), ""))
        rows.append(("P-256 signatures/s through the daemon against the C floor", rate(num("seckey.daemon_rate")),
                     f"signfloor {rate(floor)}", ratio(num("seckey.daemon_rate"), floor), ""))
if "seckey_rsa.legacy_rate" in r:
    rsa_inproc = num("seckey_rsa.inproc_rate")
    rows.append(("RSA-2048 PKCS1 encryptions/s, SecKeyEncrypt (legacy call, key from DER, in process)",
                 rate(num("seckey_rsa.legacy_rate")), f"KeychainKeys in process {rate(rsa_inproc)}",
                 ratio(num("seckey_rsa.legacy_rate"), rsa_inproc), ""))
    if "seckey_rsa.openssl_public_rate" in r:
        rows.append(("RSA-2048 PKCS1 encryptions/s, KeychainKeys in process", rate(rsa_inproc),
                     f"openssl speed rsa2048 verify/s {rate(num('seckey_rsa.openssl_public_rate'))}",
                     ratio(rsa_inproc, num("seckey_rsa.openssl_public_rate")), ""))
if "load.quiet.median_us" in r:
    quiet, busy = num("load.quiet.median_us"), num("load.busy.median_us")
    rows.append(("load test: owner's lookup latency, quiet (median, 1 client)", us(quiet), "", "", ""))
    rows.append((f"load test: the same while another uid holds {grouped(num('load.idle.connections'))} idle connections "
                 f"and runs 8 busy clients", us(busy), f"quiet {us(quiet)}", ratio(busy, quiet),
                 f"within 2x: {verdict(busy == busy and busy <= 2 * quiet)}"))
    rows.append(("load test: the other uid's 8 busy clients (total lookups)", rate(num("load.others.rate")),
                 f"owner under load {rate(num('load.busy.rate'))}", "", ""))
    if "load.quiet.daemon_wait_p50_us" in r:
        # What the daemon controls: how long the owner's request waits inside it (frame read to handler start).
        for q, label in (("p50", "median"), ("p99", "p99")):
            qw, bw = num(f"load.quiet.daemon_wait_{q}_us"), num(f"load.busy.daemon_wait_{q}_us")
            rows.append((f"load test: owner's in-daemon wait, {label}, under load (client-side median beside it)",
                         us(bw), f"quiet {us(qw)}; client {us(busy)}", ratio(bw, qw),
                         f"within 2x: {verdict(bw == bw and bw <= 2 * max(qw, 1))}"))
rows.append((f"daemon start with this run's audit log ({grouped(num('audit_lines'))} lines, {num('audit_bytes') / 1048576:.1f} MiB)",
             ms(num("daemon_start.end_ms")), f"at the start {ms(num('daemon_start.first_ms'))}",
             ratio(num("daemon_start.end_ms"), num("daemon_start.first_ms")), ""))
def mib(key):
    return f"{num(key) / 1024:.1f} MiB"


rows.append((f"daemon resident memory, mounted ({grouped(items_total)} items)", mib("rss.mounted_kib"), "", "", "bounded"))
rows.append((f"daemon resident memory, {grouped(wide)} names known to the kernel", mib("rss.known_kib"),
             f"mounted {mib('rss.mounted_kib')}", ratio(num("rss.known_kib"), num("rss.mounted_kib")), ""))
rows.append((f"daemon resident memory, after opendir + ls of big ({grouped(big)})", mib("rss.listed_kib"),
             f"mounted {mib('rss.mounted_kib')}", ratio(num("rss.listed_kib"), num("rss.mounted_kib")), ""))
rows.append((f"daemon resident memory, after GNU ls -l of big ({grouped(big)})", mib("rss.gnu_listed_kib"),
             f"mounted {mib('rss.mounted_kib')}", ratio(num("rss.gnu_listed_kib"), num("rss.mounted_kib")), "<= 64 MiB"))
rows.append(("daemon resident memory 60 s after the listings of big", mib("rss.settled_kib"),
             f"mounted {mib('rss.mounted_kib')}", ratio(num("rss.settled_kib"), num("rss.mounted_kib")), "<= 1.5x mounted"))
rows.append(("daemon resident memory at the end (peak)", mib("daemon_rss_kib"), f"peak {mib('daemon_hwm_kib')}", "", ""))
rows.append((f"fill of big ({grouped(big)} items, Vault.addAll)", f"{num('fill_seconds'):.1f} s",
             f"{num('fill_rate'):,.0f} items/s in addAll", "", ""))


def md_table(header, rows, align=None):
    widths = [len(h) for h in header]
    for row in rows:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    align = align or ["l"] * len(header)

    def fmt(row):
        return "| " + " | ".join(c.ljust(widths[i]) if align[i] == "l" else c.rjust(widths[i])
                                 for i, c in enumerate(row)) + " |"
    sep = "|" + "|".join(("-" * (w + 1) + ":") if a == "r" else ("-" * (w + 2)) for w, a in zip(widths, align)) + "|"
    return "\n".join([fmt(header), sep] + [fmt(r) for r in rows])


main_table = md_table(["figure", "value", "baseline (same run)", "ratio", "target"], rows,
                      ["l", "r", "l", "r", "l"])

fs_rows = []
fs_names = [("tmpfs", "tmpfs"), ("minfs", "minfs (C, low-level, mt loop)"),
            ("minfs_single", "minfs -s (single-threaded loop)"), ("minfs_flush", "minfs --flush (answers FLUSH)"),
            ("kcfs", "keychainfs default (direct I/O)"),
            ("kcfs_cache", "keychainfs -o kernel_cache"), ("kcfs_big", f"keychainfs default, big/{r.get('mid_account', '?')}")]
for key, label in fs_names:
    fs_rows.append((label, us(num(f"read.{key}.median_us")), us(num(f"read.{key}.p90_us")),
                    ratio(num(f"read.{key}.median_us"), read_minfs), us(num(f"cpu.{key}.us_per_op")),
                    us(num(f"cpu.{key}.sys_us_per_op")),
                    us(num(f"stat.{key}.median_us")), us(num(f"stat.{key}.p90_us")),
                    ratio(num(f"stat.{key}.median_us"), num("stat.tmpfs.median_us"))))
fs_table = md_table(["filesystem", "read median", "read p90", "read vs minfs", "server CPU/read", "of it kernel",
                     "stat median", "stat p90", "stat vs tmpfs"],
                    fs_rows, ["l", "r", "r", "r", "r", "r", "r", "r", "r"])

summary = (f"Headline: keychainfs default-mode open+read+close is {headline:.2f}x minfs "
           f"(target 1.3x: {verdict(target_met)})"
           + (f"; {len(repeat_ratios)} more short runs: median {repeat_median:.2f}x, "
              f"{repeat_ratios[0]:.2f}x-{repeat_ratios[-1]:.2f}x." if repeat_ratios else "."))

# ------------------------------------------------------------------ scaling
scale_sizes = [int(x) for x in r.get("scale_sizes", "").split()]
scale_sizes = [n for n in scale_sizes if f"scale.{n}.socket_rate" in r or f"scale.{n}.fill_rate" in r]


def sc(n, key):
    return num(f"scale.{n}.{key}")


def with_ratio(text, a, b):
    return text if a != a or b != b or b == 0 else f"{text} ({a / b:.2f}x)"


def kib_mib(x):
    return "-" if x != x else f"{x / 1024:.1f} MiB"


def bytes_per_item(n):
    return (sc(n, "vault_bytes") + (sc(n, "wal_bytes") if sc(n, "wal_bytes") == sc(n, "wal_bytes") else 0)) / n


scale_table = scale_table2 = scale_summary = ""
if scale_sizes:
    first, last = scale_sizes[0], scale_sizes[-1]
    srows = []
    for n in scale_sizes:
        srows.append((grouped(n),
                      f"{grouped(sc(n, 'fill_items'))} in {sc(n, 'fill_step_seconds'):.1f} s",
                      rate(sc(n, "fill_rate")),
                      f"{us(sc(n, 'read_random.median_us'))} / {us(sc(n, 'read_random.p90_us'))}",
                      us(sc(n, "read_fixed.median_us")),
                      f"{us(sc(n, 'read_minfs.median_us'))} / {us(sc(n, 'read_minfs.p90_us'))}",
                      ratio(sc(n, "read_random.median_us"), sc(n, "read_minfs.median_us")),
                      f"{us(sc(n, 'read_minfs_random.median_us'))} ({ratio(sc(n, 'read_random.median_us'), sc(n, 'read_minfs_random.median_us'))})",
                      ratio(sc(n, "read_fixed.median_us"), sc(n, "read_minfs.median_us")),
                      with_ratio(rate(sc(n, "socket_rate")), sc(n, "socket_rate"), sc(first, "socket_rate")),
                      with_ratio(rate(sc(n, "find_rate")), sc(n, "find_rate"), sc(first, "find_rate")),
                      f"{rate(sc(n, 'engine_floor_rate'))} ({ratio(sc(n, 'find_rate'), sc(n, 'engine_floor_rate'))})"))
    scale_table = md_table(["items", "fill step (added)", "fill add/s", "read random: median / p90", "read s0/a0",
                            "minfs: median / p90", "random vs minfs",
                            "minfs --big, random files (random vs it; target <= 1.5x)", "s0/a0 vs minfs",
                            f"socket lookups (vs {grouped(first)})", f"in-process find (vs {grouped(first)})",
                            "C engine floor (find vs it; target >= 0.5x)"],
                           srows, ["r"] * 12)
    srows2 = []
    for n in scale_sizes:
        srows2.append((grouped(n),
                       with_ratio(ms(sc(n, "daemon_start_ms")), sc(n, "daemon_start_ms"), sc(first, "daemon_start_ms")),
                       with_ratio(ms(sc(n, "unlock_ms")), sc(n, "unlock_ms"), sc(first, "unlock_ms")),
                       with_ratio(ms(sc(n, "mount_ms")), sc(n, "mount_ms"), sc(first, "mount_ms")),
                       with_ratio(ms(sc(n, "lock_ms")), sc(n, "lock_ms"), sc(first, "lock_ms")),
                       kib_mib(sc(n, "rss_mounted_kib")), kib_mib(sc(n, "rss_kib")), kib_mib(sc(n, "hwm_kib")),
                       with_ratio(ms(sc(n, "status_ms")), sc(n, "status_ms"), sc(first, "status_ms")),
                       kib_mib(sc(n, "rss_status_kib")), kib_mib(sc(n, "hwm_status_kib")),
                       f"{sc(n, 'vault_bytes') / 1048576:.1f} MiB", f"{bytes_per_item(n):.0f}"))
    scale_table2 = md_table(["items", "daemon start", "unlock", "mount", "lock",
                             "daemon RSS mounted", "RSS after reads + lookups", "peak (VmHWM)",
                             "then status --json", "RSS after status", "peak after status", "vault file",
                             "bytes/item"],
                            srows2, ["r"] * 13)
    scale_summary = (f"At {grouped(last)} items: daemon peak memory {kib_mib(sc(last, 'hwm_kib'))} (VmHWM; "
                     f"{kib_mib(sc(first, 'hwm_kib'))} at {grouped(first)}; Argon2id's unlock is most of it), resident "
                     f"{kib_mib(sc(last, 'rss_kib'))} after the reads and lookups ({kib_mib(sc(first, 'rss_kib'))} at "
                     f"{grouped(first)}) and {kib_mib(sc(last, 'rss_status_kib'))} after one `status` "
                     f"(peak {kib_mib(sc(last, 'hwm_status_kib'))}); vault {bytes_per_item(last):.0f} bytes per item; "
                     f"open+read+close of a random file {us(sc(last, 'read_random.median_us'))} "
                     f"({ratio(sc(last, 'read_random.median_us'), sc(last, 'read_minfs.median_us'))} minfs's one file, "
                     f"{ratio(sc(last, 'read_random.median_us'), sc(last, 'read_minfs_random.median_us'))} minfs's random files, "
                     f"{ratio(sc(last, 'read_random.median_us'), sc(first, 'read_random.median_us'))} the "
                     f"{grouped(first)}-item figure); socket lookups {rate(sc(last, 'socket_rate'))} "
                     f"({ratio(sc(last, 'socket_rate'), sc(first, 'socket_rate'))} the {grouped(first)}-item rate).")

print()
print(f"keychainfs benchmark ({r.get('mode', '?')} run, {r.get('machine_date', '?')}, "
      f"{r.get('machine_nproc', '?')} cores, kernel {r.get('machine_kernel', '?')}, commit {r.get('machine_commit', '?')})")
if have_main:
    print()
    print(main_table)
    print()
    print(fs_table)
if scale_sizes:
    print()
    print(f"Scaling to {grouped(scale_sizes[-1])} items (one vault grown step by step; services of "
          f"{grouped(num('scale_per_service'))}):")
    print()
    print(scale_table)
    print()
    print(scale_table2)
print()
if have_main:
    print(summary)
if scale_sizes:
    print(scale_summary)
print(f"Run time: {num('total_seconds'):.0f} s in all (build {num('build_seconds'):.0f} s, "
      f"measurements {num('measure_seconds'):.0f} s" +
      (f", of which scaling {num('scale_total_seconds'):.0f} s)." if scale_sizes else ")."))

# ------------------------------------------------------------------ plot
plot_names = [(k, label) for k, label in fs_names if k != "kcfs_big"]
if args.plot and have_main:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for _, label in plot_names]
    colors = ["#9e9e9e", "#4c72b0", "#8fa8d6", "#55a868", "#dd8452", "#f0b27a"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for ax, kind, title in ((axes[0], "read", "open + read + close of a 32-byte file"),
                            (axes[1], "stat", "stat (cached entry)")):
        med = [num(f"{kind}.{k}.median_us") for k, _ in plot_names]
        p90 = [num(f"{kind}.{k}.p90_us") for k, _ in plot_names]
        y = list(range(len(labels)))[::-1]
        ax.barh(y, med, color=colors, label="median")
        ax.scatter(p90, y, marker="|", s=250, color="black", label="p90", zorder=3)
        for yi, m in zip(y, med):
            ax.text(m, yi, f" {m:.1f}", va="center", fontsize=8)
        ax.set_yticks(y)
        ax.set_yticklabels(labels if kind == "read" else [""] * len(labels), fontsize=8)
        ax.set_xlabel("microseconds per operation")
        ax.set_title(title, fontsize=10)
        ax.set_xlim(0, max(x for x in med + p90 if x == x) * 1.2)
        if kind == "read":
            ax.legend(fontsize=8, loc="center right")
    if read_minfs == read_minfs:
        axes[0].axvline(read_minfs * 1.3, color="#4c72b0", linestyle="--", linewidth=1)
        axes[0].text(read_minfs * 1.3, len(labels) - 0.55, " target: 1.3x minfs", color="#4c72b0", fontsize=8)
    fig.suptitle(f"keychainfs vs baselines, same run: {r.get('machine_nproc', '?')} cores, kernel {r.get('machine_kernel', '?')}, "
                 f"{r.get('machine_date', '?')} ({r.get('mode', '?')} run)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)

if args.scale_plot and scale_sizes:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = scale_sizes
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    series = [("read_random.median_us", "keychainfs, random file (median)", "#dd8452", "o", "-"),
              ("read_random.p90_us", "keychainfs, random file (p90)", "#dd8452", "", ":"),
              ("read_fixed.median_us", "keychainfs, one file again and again (median)", "#c44e52", "s", "-"),
              ("read_minfs.median_us", "minfs, same run (median)", "#4c72b0", "^", "--")]
    # The axis fits the medians; a p90 above it is written at the top edge.
    top = max([0] + [y for k, *_ in series if "median" in k for y in (sc(n, k) for n in xs) if y == y]) * 1.6
    for key, label, color, marker, style in series:
        ys = [sc(n, key) for n in xs]
        ax1.plot(xs, ys, marker=marker or None, linestyle=style, color=color, label=label)
        for x, y in zip(xs, ys):
            if y == y and top and y > top:
                ax1.annotate(f"p90 {y:,.0f}", (x, top), xytext=(0, -10), textcoords="offset points",
                             ha="right", fontsize=7, color=color)
    minfs_all = sorted(y for y in (sc(n, "read_minfs.median_us") for n in xs) if y == y)
    if minfs_all:
        ref = minfs_all[len(minfs_all) // 2]
        ax1.axhline(ref, color="#4c72b0", linewidth=0.8, alpha=0.5)
        ax1.axhline(ref * 1.3, color="#4c72b0", linewidth=0.8, linestyle="-.", alpha=0.7,
                    label="1.3x minfs (median over sizes)")
    ax1.set_xscale("log")
    ax1.set_ylim(0, top or 1)
    ax1.set_xlabel("items in the vault")
    ax1.set_ylabel("microseconds")
    ax1.set_title("open + read + close through the mount", fontsize=10)
    ax1.legend(fontsize=7, loc="upper left")
    top = 0
    for key, label, color, marker in (("socket_rate", "through the daemon's socket, 1 client", "#55a868", "o"),
                                      ("find_rate", "in process (Vault.copyMatching)", "#8172b2", "s")):
        ys = [sc(n, key) for n in xs]
        top = max([top] + [y for y in ys if y == y])
        ax2.plot(xs, ys, marker=marker, color=color, label=label)
    ax2.set_xscale("log")
    ax2.set_ylim(0, top * 1.15 if top else 1)
    ax2.set_xlabel("items in the vault")
    ax2.set_ylabel("lookups per second (r_Data, random items)")
    ax2.set_title("lookups", fontsize=10)
    ax2.legend(fontsize=7, loc="lower left")
    for ax in (ax1, ax2):
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{n:,}" for n in xs], fontsize=8)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"keychainfs against item count, same run: {r.get('machine_nproc', '?')} cores, "
                 f"{r.get('machine_date', '?')} ({r.get('mode', '?')} run)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.scale_plot, dpi=110)

# ------------------------------------------------------------------ the document
if args.doc:
    analysis = ""
    if args.analysis and os.path.exists(args.analysis):
        analysis = open(args.analysis).read().strip() + "\n"
    inproc_md = "\n\n".join("\n".join(t) for t in inproc_tables) if inproc_tables else "(no output)"
    m = re.search(r"Argon2id (\S+): opslimit (\d+), memlimit ([\d,]+) bytes", inproc_text)
    kdf = f"Argon2id {m.group(1)} ({m.group(2)} passes, {int(m.group(3).replace(',', '')) >> 20} MiB)" if m else "Argon2id"
    kdf_mib = int(m.group(3).replace(',', '')) >> 20 if m else 64
    plot_name = os.path.basename(args.plot) if args.plot else "performance-read-latency.png"
    scale_plot_name = os.path.basename(args.scale_plot) if args.scale_plot else "performance-scale.png"
    mode = r.get("mode", "?")
    scale_largest = grouped(scale_sizes[-1]) if scale_sizes else "-"
    if scale_sizes:
        scale_md = f"""## Scaling to {scale_largest} items

One vault (`scale.vault`, `--kdf interactive`) grown step by step to {", ".join(grouped(n) for n in scale_sizes)}
generic passwords `s<i/{inum('scale_per_service')}>/a<i>` (services of {grouped(num('scale_per_service'))} accounts, 32-byte
secrets, WhenUnlocked) with the in-process fill, its daemon stopped; at each size its daemon is
started, unlocked and the vault mounted, then measured, locked and stopped. Read latency is
compared with minfs read in the same loop at the same size; lookup rates with the
{grouped(scale_sizes[0])}-item figure; daemon start, unlock, mount, lock and `status` with theirs.

**{scale_summary}**

{scale_table}

{scale_table2}

![read latency and lookups against item count]({scale_plot_name})
"""
    else:
        scale_md = "## Scaling\n\n(not measured in this run: `--no-scale`)\n"
    doc = f"""# Performance

Figures from `bench/run.sh` (PRODUCT 10; the Benchmark sections of issues 3 and 5). Every
comparison is a ratio inside one run on one machine, because the machine is noisy: the baselines
(tmpfs, a minimal C FUSE filesystem, `cat`) were measured in the same run, interleaved with
keychainfs where possible. The tables and the plot are rewritten by each run of the script.

- Run: {mode} (`bench/run.sh{' --quick' if mode == 'quick' else ''}`), {r.get('machine_date', '?')}; {num('total_seconds'):.0f} s in all
  (build {num('build_seconds'):.0f} s, measurements {num('measure_seconds'):.0f} s{f", of which the scaling to {scale_largest} items {num('scale_total_seconds'):.0f} s" if scale_sizes else ""})
- Machine: {r.get('machine_nproc', '?')} cores ({r.get('machine_cpu', '?')}), Linux {r.get('machine_kernel', '?')},
  load average at the start {r.get('machine_load', '?')}; {r.get('machine_swift', '?')}; libfuse {r.get('machine_libfuse', '?')}
- Code: commit {r.get('machine_commit', '?')}; release build of {r.get('binary_date', '?')}
- Vault: {grouped(items_total)} generic passwords, all WhenUnlocked with 32-byte secrets, `--kdf interactive`:
  `big/user0` .. `big/user{big - 1}` (one service of {grouped(big)}), `w0/a0` .. (the "wide" layout:
  {grouped(wide)} accounts in services of {per_service}), and `bench/secret`; for the scaling, a second
  vault grown to {scale_largest} items (below)

**{summary}**{chr(10) * 2 + "**" + scale_summary + "**" if scale_sizes else ""}

## Reproduce

```sh
bench/run.sh                 # full: 100,000 accounts in one service and 100,000 in services of 100,
                             # then a second vault grown to 1,000,000 items (about 15 minutes)
bench/run.sh --quick         # 10,000 of each, fewer iterations, growth to 100,000: a few minutes
bench/run.sh --items N       # another size for the first part
bench/run.sh --scale-max N   # grow the scaling vault to N items (1,000, 10,000, ... below N, then N)
bench/run.sh --no-scale      # the first part only; --scale-only: the scaling only (no page written)
bench/run.sh --no-doc        # leave this page and its plots alone; --keep keeps the temp dir
KEYCHAINFS_BENCH_SCRATCH=/tmp/my-build bench/run.sh   # another SwiftPM scratch path
bench/run.sh --no-build      # the binaries already in the scratch path, as they are
bench/run.sh --source DIR    # build from another checkout, e.g. `git worktree add DIR HEAD`
```

As root on Debian 12 with Swift at `/opt/swift` and `/dev/fuse`. The script installs what it
misses with apt-get (libfuse3, libsodium, SQLite, `hyperfine`, `bc`, `python3-matplotlib`), builds
`keychainfs` and `keychainfs-bench` in release with `--scratch-path ${{KEYCHAINFS_BENCH_SCRATCH:-/tmp/perf-build}}`,
compiles `bench/minfs.c` and `bench/readloop.c`, and undoes every mount, daemon and temporary
file on exit, also when interrupted. `bench/report.py` turns the figures into this page and
its two plots (`{plot_name}`, `{scale_plot_name}`). The first part and
the scaling use separate vaults and daemons; the scaling's fill of {scale_largest} items dominates its time
(the fill rate is in the table).

## Results

{main_table}

### Per filesystem

{fs_table}

![read latency per filesystem]({plot_name})

{scale_md}
## In-process (`keychainfs-bench --quick`, same run)

KeychainCore alone, no daemon or socket; {kdf}. Rates are operations per second.

{inproc_md}

Earlier in-process runs, for comparison (not from this run): the full run (1k / 100k / 1M items)
before the guarded-memory pool measured fill 5.8k / 5.0k / 4.3k add/s, single add ~1.2-1.6k/s,
find 6.0k / 5.9k / 5.7k/s, unlock ~84-98 ms and passphrase change ~170-184 ms flat across sizes,
~625 bytes/item; after the pool, `--quick` gave find 28k/s at 1k and 20k/s at 10k items and fill 15k/s.

{analysis}
## What each figure measures

- **open+read+close**: `bench/readloop read`: `open(O_RDONLY)`, one `read` of up to 4096 bytes
  (it returns the 32 bytes, checked), `close`, each timed with `CLOCK_MONOTONIC` inside one
  process, so process start is not measured. The files are `/bench/secret` on each filesystem,
  read in 10 interleaved rounds after 500 warm-up operations each, so all see the same noise.
  **minfs** (`bench/minfs.c`) is the baseline: libfuse 3 low-level API, one directory with one
  file holding a fixed 32-byte buffer, `direct_io` on open, 1.0 s entry and attribute timeouts,
  `-o default_permissions`, the same multi-threaded loop (at most 16 threads) as keychainfs; a
  second instance runs its loop single-threaded (`-s`), and a third answers FLUSH with a no-op
  (`--flush`) as keychainfs does, so that every `close` costs one more round trip (a minimal
  filesystem leaves FLUSH unimplemented and the kernel stops sending it). keychainfs runs in its default mode
  (direct I/O, 1 s timeouts) and with `-o kernel_cache` (page cache kept, 30 s timeouts); one
  daemon serves both mounts. `big/{r.get('mid_account', '?')}` is read on its own, fewer times.
- **server CPU per read**: user + system CPU of the serving process (`/proc/PID/stat`) over
  {grouped(num('cpu_n'))} open+read+close operations on one file, divided by their number:
  a figure that the machine's other load hardly moves ("of it kernel": the system-time part).
- **stat**: `stat(2)` of the same paths; the kernel answers from its cache while the attributes
  are fresh, so this is the cost of a cached entry.
- **ls -l**: `readloop ls`: `opendir`, `readdir` to the end, `lstat` of each entry (what `ls -l`
  does minus formatting), first cold (right after a lock and unlock, nothing cached), within
  {r.get('ls_budget', '?')} s; a listing that does not finish in time is stopped and its total projected
  linearly from the entries done (each `lstat` of an uncached name is one FUSE lookup). When it
  finishes, two more listings and one GNU `ls -l` follow. The tmpfs baseline is a directory of
  {grouped(big)} empty files.
- **lock-keychain**: wall time of the `keychainfs lock-keychain` process (with its process start),
  after `lstat` of ~0, {grouped(small)} and {grouped(wide)} names of the wide layout so that the
  kernel knows them, and after a listing with `lstat` of every account of `big`; the daemon
  invalidates each known service directory (and each open file) before it answers. Checked:
  `bench/secret` is gone (ENOENT) when the command returns. The vault is unlocked after each.
  **add-generic-password** is timed the same way, because every change through the socket also
  invalidates every entry the kernel knows.
- **CLI**: {cli_how}, {int(num('cli.find.runs') or 0)} runs after 10 warm-ups each, of
  `keychainfs find-generic-password -s bench -a secret -w` (the thin client: no daemon, SQLite or
  libfuse linked), of `cat` of the same secret through the default mount, of `keychainfs help`
  (process start and argument parsing, no daemon), of a stdlib-only Swift "hello" built with
  `swiftc -O` (the floor for any Swift process here), of the same hello built with
  `-static-stdlib` (as the release `keychainfs` is) and of `cat` of the tmpfs file.
- **daemon start**: `keychainfs stop`, then the wall time of `keychainfs lock-keychain`, which
  starts the daemon, waits for its socket and locks the (already locked) vault: at the start of
  the run (audit log empty) and at the end (median of 3), with the audit log the run wrote (one
  line per file open and per read through the socket).
- **daemon memory**: VmRSS of the daemon after mounting, after the kernel learned the
  {grouped(wide)} names, after the listing of `big` (whose `opendir` lists the whole service), and
  at the end; VmHWM is the peak (it includes Argon2id's {kdf_mib} MiB during each unlock).
- **socket**: `keychainfs-bench socket`: C threads, each with its own `DaemonClient` connection,
  send `copyMatching` with `r_Data` for {r.get('socket_seconds', '?')} s and check the bytes that come back;
  for `bench/secret`, or for random accounts of `big`. `secitem`: the same lookup through
  `import Security`'s `SecItemCopyMatching` from 1 and 8 threads of one process (its pool of
  connections). Each rate is also given as a ratio to the in-process find rate of this run.
- **load test**: a Unix user made for the run (removed after) is entitled to an access group
  (`group add --group USER --mode 0440`) holding `load/secret`. The owner's median latency of
  that lookup from 1 client for {r.get('socket_seconds', '?')} s, quiet; then again while the
  other user holds {grouped(num('load.idle.connections'))} connections that each sent one byte
  of a frame (`keychainfs-bench idle --partial`) and runs 8 busy clients of the same lookup.
- **fill**: `keychainfs-bench fill` adds the items with `Vault.addAll` (batches of 10,000) to the
  vault file before the daemon opens it.
- **scaling**: at each size, `keychainfs-bench fill --start K --finds F` adds the items from the
  previous size on (so the vault grows, it is not refilled; "fill step" is the whole process,
  Argon2id unlock included, "fill add/s" the rate inside `addAll`), then looks up
  {grouped(num('scale_finds'))} random items of the whole vault in process with `r_Data`
  ("in-process find"). The vault file's size after the fill closed it (WAL checkpointed)
  divided by the items is "bytes/item". Then: `lock-keychain` (starts the daemon: "daemon
  start"), `unlock-keychain` (Argon2id and the CLI's process start included), `mount`;
  `readloop read` with a list of distinct random existing files (`@LIST`: each file
  read once, so each open also makes the kernel look the name up), next to `s0/a0` read over
  and over and minfs's file, in 5 interleaved rounds; `keychainfs-bench socket --per-service`
  from 1 client for {r.get('scale_seconds_socket', '?')} s over random items of the whole vault; the daemon's
  VmRSS after the mount and after the reads and lookups, and VmHWM (its peak, which includes
  Argon2id's {kdf_mib} MiB during the unlock); then `status --json`, which counts the items
  per protection class, and the daemon's VmRSS and VmHWM after it; then `lock-keychain`
  ("lock"), `unmount`, `stop`. The daemon's pid comes from its command line, not from `status`.
"""
    open(args.doc, "w").write(doc)
    print(f"wrote {args.doc}" + (f", {args.plot}" if args.plot else "") +
          (f", {args.scale_plot}" if args.scale_plot and scale_sizes else ""))
