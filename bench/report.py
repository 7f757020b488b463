#!/usr/bin/env python3
"""Turns bench/run.sh's figures into the printed results table, docs/performance.md and the
read-latency plot. Run by bench/run.sh with Debian's python3 (python3-matplotlib).

  report.py --results FILE --inproc FILE [--doc MD --plot PNG [--analysis MD]]
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
    return f"{int(n):,}"


big = int(num("big_items"))
small = int(num("known_small"))
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
wide = int(num("wide_items"))
per_service = int(num("per_service"))
items_total = int(num("vault_items"))
rows.append(("open+read+close, keychainfs default (median)", us(read_kcfs),
             f"minfs {us(read_minfs)}", ratio(read_kcfs, read_minfs), f"<= 1.3x: {verdict(target_met)}"))
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
                 f"tmpfs {ms(num('ls.tmpfs.gnu_ms'))}", ratio(num("ls.kcfs.gnu_ms"), num("ls.tmpfs.gnu_ms")), ""))
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
rows.append((f"lock-keychain, {grouped(wide)} entries known", ms(num("lock.big.ms")),
             f"~0 known {ms(lock0)}", ratio(num("lock.big.ms"), lock0), ""))
add0 = num("add.none.ms")
rows.append(("add-generic-password, ~0 entries known (median of 3)", ms(add0), "", "", ""))
rows.append((f"add-generic-password, {grouped(small)} entries known (median of 3)", ms(num("add.small.ms")),
             f"~0 known {ms(add0)}", ratio(num("add.small.ms"), add0), ""))
rows.append((f"add-generic-password, {grouped(wide)} entries known", ms(num("add.big.ms")),
             f"~0 known {ms(add0)}", ratio(num("add.big.ms"), add0), ""))
cat = num("cli.cat.median_ms")
rows.append(("find-generic-password -w per invocation (median)", ms(num("cli.find.median_ms")),
             f"cat {ms(cat)}", ratio(num("cli.find.median_ms"), cat), f"a few ms: {verdict(num('cli.find.median_ms') <= 5)}"))
rows.append(("keychainfs help per invocation (process start, no daemon)", ms(num("cli.help.median_ms")),
             f"Swift hello {ms(num('cli.hello.median_ms'))}", ratio(num("cli.help.median_ms"), num("cli.hello.median_ms")), ""))
rows.append(("Swift hello world, stdlib only (process start floor)", ms(num("cli.hello.median_ms")),
             f"cat {ms(cat)}", ratio(num("cli.hello.median_ms"), cat), ""))
inproc_label = f"in-process find at {grouped(inproc_largest)}" if inproc_largest else "in-process find"
rows.append(("socket lookups (copyMatching r_Data), 1 client", rate(num("socket.c1.rate")),
             f"{inproc_label} {rate(inproc_rate)}", ratio(num("socket.c1.rate"), inproc_rate),
             f"tens of thousands/s: {verdict(num('socket.c1.rate') >= 10000)}"))
rows.append(("socket lookups, 8 clients (total)", rate(num("socket.c8.rate")),
             f"1 client {rate(num('socket.c1.rate'))}", ratio(num("socket.c8.rate"), num("socket.c1.rate")),
             f"tens of thousands/s: {verdict(num('socket.c8.rate') >= 10000)}"))
rows.append((f"socket lookups, 1 client, random accounts of big", rate(num("socket.c1_random.rate")),
             f"1 client, bench/secret {rate(num('socket.c1.rate'))}", ratio(num("socket.c1_random.rate"), num("socket.c1.rate")), ""))
rows.append(("socket request latency, 1 client (median)", us(num("socket.c1.median_us")), "", "", ""))
rows.append(("SecItemCopyMatching (ReturnData), 1 thread", rate(num("secitem.t1.rate")),
             f"{inproc_label} {rate(inproc_rate)}", ratio(num("secitem.t1.rate"), inproc_rate),
             f"tens of thousands/s: {verdict(num('secitem.t1.rate') >= 10000)}"))
rows.append(("SecItemCopyMatching (ReturnData), 8 threads (total)", rate(num("secitem.t8.rate")),
             f"1 thread {rate(num('secitem.t1.rate'))}", ratio(num("secitem.t8.rate"), num("secitem.t1.rate")), ""))
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
           f"(target 1.3x: {verdict(target_met)}).")

print()
print(f"keychainfs benchmark ({r.get('mode', '?')} run, {r.get('machine_date', '?')}, "
      f"{r.get('machine_nproc', '?')} cores, kernel {r.get('machine_kernel', '?')}, commit {r.get('machine_commit', '?')})")
print()
print(main_table)
print()
print(fs_table)
print()
print(summary)
print(f"Run time: {num('total_seconds'):.0f} s in all (build {num('build_seconds'):.0f} s, "
      f"measurements {num('measure_seconds'):.0f} s).")

# ------------------------------------------------------------------ plot
plot_names = [(k, label) for k, label in fs_names if k != "kcfs_big"]
if args.plot:
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
    mode = r.get("mode", "?")
    doc = f"""# Performance

Figures from `bench/run.sh` (PRODUCT 10; the Benchmark sections of issues 3 and 5). Every
comparison is a ratio inside one run on one machine, because the machine is noisy: the baselines
(tmpfs, a minimal C FUSE filesystem, `cat`) were measured in the same run, interleaved with
keychainfs where possible. The tables and the plot are rewritten by each run of the script.

- Run: {mode} (`bench/run.sh{' --quick' if mode == 'quick' else ''}`), {r.get('machine_date', '?')}; {num('total_seconds'):.0f} s in all
  (build {num('build_seconds'):.0f} s, measurements {num('measure_seconds'):.0f} s)
- Machine: {r.get('machine_nproc', '?')} cores ({r.get('machine_cpu', '?')}), Linux {r.get('machine_kernel', '?')},
  load average at the start {r.get('machine_load', '?')}; {r.get('machine_swift', '?')}; libfuse {r.get('machine_libfuse', '?')}
- Code: commit {r.get('machine_commit', '?')}; release build of {r.get('binary_date', '?')}
- Vault: {grouped(items_total)} generic passwords, all WhenUnlocked with 32-byte secrets, `--kdf interactive`:
  `big/user0` .. `big/user{big - 1}` (one service of {grouped(big)}), `w0/a0` .. (the "wide" layout:
  {grouped(wide)} accounts in services of {per_service}), and `bench/secret`

**{summary}**

## Reproduce

```sh
bench/run.sh            # full: 100,000 accounts in one service and 100,000 in services of 100
bench/run.sh --quick    # 10,000 of each and fewer iterations: under two minutes
bench/run.sh --items N  # another size; --no-doc leaves this file alone; --keep keeps the temp dir
```

As root on Debian 12 with Swift at `/opt/swift` and `/dev/fuse`. The script installs what it
misses with apt-get (libfuse3, libsodium, SQLite, `hyperfine`, `bc`, `python3-matplotlib`), builds
`keychainfs` and `keychainfs-bench` in release with `--scratch-path ${{KEYCHAINFS_BENCH_SCRATCH:-/tmp/perf-build}}`,
compiles `bench/minfs.c` and `bench/readloop.c`, and undoes every mount, daemon and temporary
file on exit, also when interrupted. `bench/report.py` turns the figures into this page.

## Results

{main_table}

### Per filesystem

{fs_table}

![read latency per filesystem]({plot_name})

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
  kernel knows them; the daemon invalidates each known entry before it answers. Checked:
  `bench/secret` is gone (ENOENT) when the command returns. The vault is unlocked after each.
  **add-generic-password** is timed the same way, because every change through the socket also
  invalidates every entry the kernel knows.
- **CLI**: `hyperfine -N` (no shell), {int(num('cli.find.runs') or 0)} runs after 10 warm-ups each, of
  `keychainfs find-generic-password -s bench -a secret -w`, of `keychainfs help` (process start
  and argument parsing, no daemon), of a stdlib-only Swift "hello" built with `swiftc -O` (the
  floor for any Swift process here) and of `cat` of the tmpfs file.
- **daemon start**: `keychainfs stop`, then the wall time of `keychainfs lock-keychain`, which
  starts the daemon, waits for its socket and locks the (already locked) vault: at the start of
  the run (audit log empty) and at the end (median of 3), with the audit log the run wrote (one
  line per file open and per read through the socket).
- **daemon memory**: VmRSS of the daemon after mounting, after the kernel learned the
  {grouped(wide)} names, after the listing of `big` (whose `opendir` lists the whole service), and
  at the end; VmHWM is the peak (it includes Argon2id's {kdf_mib} MiB during each unlock).
- **socket**: `keychainfs-bench socket`: C threads, each with its own `DaemonClient` connection,
  send `copyMatching` with `r_Data` for {r.get('socket_seconds', '?')} s and check the bytes that come back;
  for `bench/secret`, or for random accounts of `big`.
- **fill**: `keychainfs-bench fill` adds the items with `Vault.addAll` (batches of 10,000) to the
  vault file before the daemon opens it.
"""
    open(args.doc, "w").write(doc)
    print(f"wrote {args.doc}" + (f" and {args.plot}" if args.plot else ""))
