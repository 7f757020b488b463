#!/usr/bin/env bash
# keychainfs benchmark suite (PRODUCT 10; the "Benchmark" sections of issues 3 and 5).
#
#   bench/run.sh            full run: 100,000 accounts in one service (several minutes)
#   bench/run.sh --quick    10,000 accounts, fewer iterations (under two minutes)
#
# Options: --items N (accounts in the big service and in the wide layout), --no-doc (leave
# docs/performance.md and its plot alone), --keep (keep the temporary directory, unmounted),
# --no-build (use the binaries already in the scratch path, e.g. while the tree does not build).
# Environment: KEYCHAINFS_BENCH_SCRATCH, the SwiftPM scratch path (default /tmp/perf-build).
#
# In ONE run, against one vault and one daemon, it measures:
#   - open+read+close and stat of a 32-byte file on tmpfs, on bench/minfs.c (a minimal C libfuse
#     low-level filesystem with direct I/O, run with the same multi-threaded loop as keychainfs,
#     single-threaded, and answering FLUSH as keychainfs does), on keychainfs in its default mode and with -o kernel_cache; ratios;
#     and the CPU each server spends per operation;
#   - `ls -l` of a service with N accounts (next to N empty files on tmpfs);
#   - `keychainfs lock-keychain` (and one change through the CLI) with ~0, 1,000 and N entries
#     known to the kernel;
#   - `keychainfs find-generic-password -w` per invocation next to `cat` of the tmpfs file;
#   - lookups per second through the daemon's socket from 1 and from 8 clients;
#   - the in-process benchmark `keychainfs-bench --quick`.
# It prints a results table and writes docs/performance.md and docs/performance-read-latency.png.
# Everything it mounts or starts is undone on exit, also when interrupted. Needs root.
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }

quick=0; write_doc=1; keep=0; items=""; build=1
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --no-doc) write_doc=0 ;;
        --keep) keep=1 ;;
        --no-build) build=0 ;;
        --items) shift; items=${1:?--items needs a number} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ -z "$items" || "$items" =~ ^[1-9][0-9]*$ ]] || { echo "bench/run.sh: --items takes a positive number" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
scratch=${KEYCHAINFS_BENCH_SCRATCH:-/tmp/perf-build}
run_started=$EPOCHREALTIME

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", (b - a) * 1000 }'; }
log() { printf '[%6.1fs] %s\n' "$(elapsed "$run_started")" "$*" >&2; }
die() { echo "bench/run.sh: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: it mounts tmpfs and FUSE filesystems"
[ -c /dev/fuse ] || die "/dev/fuse is missing"

# Sizes. The full run stays well under 10 minutes here, --quick under 2.
#   big         accounts in service `big` (ls -l, lookups in a large directory)
#   wide        accounts spread over services w0, w1, ... of 100 each (entries known to the kernel)
#   ls_budget   seconds allowed for one listing of `big`; a slower listing is projected
if ((quick)); then
    big=${items:-10000}; read_n=10000; stat_n=20000; cpu_n=5000; big_read_n=100
    ls_budget=10; cli_runs=50; socket_seconds=2
else
    big=${items:-100000}; read_n=40000; stat_n=50000; cpu_n=20000; big_read_n=200
    ls_budget=60; cli_runs=200; socket_seconds=5
fi
wide=$big; per_service=100
wide_services=$(( (wide + per_service - 1) / per_service ))
known_small=1000
((known_small <= wide)) || known_small=$wide

# ---------------------------------------------------------------- packages, build
packages=(fuse3 libfuse3-dev libsodium-dev libsqlite3-dev pkg-config gcc libc6-dev hyperfine bc python3 python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || die "swift not found (expected under /opt/swift)"
python=/usr/bin/python3   # Debian's, which has python3-matplotlib (not a pyenv shim)

work=$(mktemp -d /tmp/keychainfs-bench.XXXXXX)
chmod 700 "$work"
bin="$work/bin"; mkdir "$bin"
res="$work/results.txt"; : > "$res"
put() { echo "$1=$2" >> "$res"; }   # one figure for bench/report.py

mnt_default="$work/mnt-default"; mnt_cache="$work/mnt-kernel-cache"
mnt_minfs="$work/mnt-minfs"; mnt_minfs1="$work/mnt-minfs-single"; mnt_minfsf="$work/mnt-minfs-flush"
tmpfs="$work/tmpfs"
mkdir "$mnt_default" "$mnt_cache" "$mnt_minfs" "$mnt_minfs1" "$mnt_minfsf" "$tmpfs"
export KEYCHAINFS_RUNTIME_DIR="$work/run" KEYCHAINFS_DEVICE_KEY="$work/device.key" KEYCHAINFS_VAULT="$work/bench.vault"
kc=""; daemon_pid=""

is_mounted() { awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts; }

cleanup() {
    local rc=$? m f
    trap - EXIT INT TERM
    set +e
    for m in "$mnt_default" "$mnt_cache"; do
        if is_mounted "$m"; then
            [ -x "$kc" ] && timeout 10 "$kc" unmount "$m" >/dev/null 2>&1
            is_mounted "$m" && umount -l "$m"
        fi
    done
    [ -x "$kc" ] && timeout 10 "$kc" stop >/dev/null 2>&1
    if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
        kill "$daemon_pid" 2>/dev/null; sleep 0.5; kill -9 "$daemon_pid" 2>/dev/null
    fi
    for m in "$mnt_minfs" "$mnt_minfs1" "$mnt_minfsf"; do
        is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
    done
    for f in "$work"/minfs*.pid; do   # (minfs removes its pid file when it ends)
        pid=$(cat "$f" 2>/dev/null) && grep -qs minfs "/proc/$pid/cmdline" && kill "$pid" 2>/dev/null
    done
    is_mounted "$tmpfs" && { umount "$tmpfs" 2>/dev/null || umount -l "$tmpfs"; }
    if grep -q " $work/" /proc/mounts; then
        echo "bench/run.sh: something is still mounted under $work; not removing it" >&2
    elif ((keep)); then
        echo "bench/run.sh: kept $work" >&2
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "bench/run.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

build_started=$EPOCHREALTIME
if ((build)); then
    log "building keychainfs and keychainfs-bench (release, scratch path $scratch)"
    (cd "$root" && swift build -c release --scratch-path "$scratch" --product keychainfs >"$work/build.log" 2>&1 &&
                   swift build -c release --scratch-path "$scratch" --product keychainfs-bench >>"$work/build.log" 2>&1) ||
        { tail -30 "$work/build.log" >&2; die "swift build failed (--no-build uses the binaries already built)"; }
else
    log "not building: using the binaries in $scratch/release"
fi
kc="$scratch/release/keychainfs"
kcbench="$scratch/release/keychainfs-bench"
[ -x "$kc" ] && [ -x "$kcbench" ] || die "no keychainfs or keychainfs-bench in $scratch/release"
put binary_date "$(date -u -r "$kc" '+%Y-%m-%d %H:%M UTC')"
cc -O2 -Wall -o "$bin/minfs" "$root/bench/minfs.c" $(pkg-config --cflags --libs fuse3)
cc -O2 -Wall -o "$bin/readloop" "$root/bench/readloop.c"
echo 'print("hello")' > "$bin/hello.swift"   # the floor of a Swift process start, stdlib only
swiftc -O -o "$bin/swift-hello" "$bin/hello.swift" 2>> "$work/build.log" || die "swiftc hello failed"
rl="$bin/readloop"
put build_seconds "$(elapsed "$build_started")"
measure_started=$EPOCHREALTIME

# ---------------------------------------------------------------- machine
put machine_nproc "$(nproc)"
put machine_kernel "$(uname -r)"
put machine_cpu "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
put machine_date "$(date -u '+%Y-%m-%d %H:%M UTC')"
put machine_swift "$(swift --version 2>&1 | head -1)"
put machine_libfuse "$(pkg-config --modversion fuse3)"
dirty=$(git -C "$root" --no-optional-locks status --porcelain -- Sources Package.swift 2>/dev/null | grep -c . || true)
put machine_commit "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$( ((dirty)) && echo " + uncommitted changes in $dirty files under Sources")"
put machine_load "$(cut -d' ' -f1-3 /proc/loadavg)"
put mode "$( ((quick)) && echo quick || echo full)"
put big_items "$big"
put wide_items "$wide"
put per_service "$per_service"
put known_small "$known_small"
put socket_seconds "$socket_seconds"
put ls_budget "$ls_budget"
put cpu_n "$cpu_n"

# ---------------------------------------------------------------- vault
secret=0123456789abcdef0123456789ABCDEF   # 32 bytes, the same in every filesystem
passphrase="keychainfs bench passphrase"
log "vault (--kdf interactive): $big accounts in service big, $wide in w0..w$((wide_services - 1)) ($per_service each)"
echo "$passphrase" | "$kc" create-keychain --kdf interactive >/dev/null
"$kc" stop
# Fill the file directly with Vault.addAll while no daemon holds it: far faster than the socket.
fill_started=$EPOCHREALTIME
echo "$passphrase" | "$kcbench" fill --vault "$KEYCHAINFS_VAULT" --service big --count "$big" --prefix user 2>/dev/null |
    tr ' ' '\n' >> "$res"
echo "$passphrase" | "$kcbench" fill --vault "$KEYCHAINFS_VAULT" --service w --per-service "$per_service" \
    --count "$wide" --prefix a 2>/dev/null > /dev/null
put fill_total_seconds "$(elapsed "$fill_started")"
# lock-keychain starts the daemon and does nothing else on a locked vault (show-keychain-info
# would also count every item).
t0=$EPOCHREALTIME; "$kc" lock-keychain; put daemon_start.first_ms "$(ms_since "$t0")"
echo "$passphrase" | "$kc" unlock-keychain
printf '%s' "$secret" | "$kc" add-generic-password -s bench -a secret -w -
[ "$("$kc" find-generic-password -s bench -a secret -w)" = "$secret" ] || die "the secret does not read back"
daemon_pid=$("$kc" status --json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
[ -n "$daemon_pid" ] || die "no daemon pid"
vault_items=$(( big + wide + 1 ))
put vault_items "$vault_items"
log "vault: $vault_items items, daemon pid $daemon_pid"

# ---------------------------------------------------------------- mounts
"$kc" mount "$mnt_default"
"$kc" mount -o kernel_cache "$mnt_cache"
"$bin/minfs" "$mnt_minfs" -o default_permissions --pidfile "$work/minfs.pid"
"$bin/minfs" "$mnt_minfs1" -s -o default_permissions --pidfile "$work/minfs-single.pid"
"$bin/minfs" "$mnt_minfsf" --flush -o default_permissions --pidfile "$work/minfs-flush.pid"
mount -t tmpfs -o size=64m,mode=0755 keychainfs-bench "$tmpfs"
mkdir "$tmpfs/bench"
printf '%s' "$secret" > "$tmpfs/bench/secret"
chmod 0400 "$tmpfs/bench/secret"
for m in "$mnt_default" "$mnt_cache" "$mnt_minfs" "$mnt_minfs1" "$mnt_minfsf" "$tmpfs"; do is_mounted "$m" || die "$m is not mounted"; done
mid_account="user$(( big / 2 ))"
for f in "$tmpfs/bench/secret" "$mnt_minfs/bench/secret" "$mnt_minfs1/bench/secret" "$mnt_minfsf/bench/secret" \
         "$mnt_default/bench/secret" "$mnt_cache/bench/secret"; do
    [ "$(cat "$f")" = "$secret" ] || die "$f does not hold the secret"
done
[ "$(stat -c %s "$mnt_default/big/$mid_account")" = 32 ] || die "big/$mid_account is not 32 bytes"
put mid_account "$mid_account"
rss_put() { put "rss.$1_kib" "$(awk '/^VmRSS/ { print $2 }' "/proc/$daemon_pid/status")"; }
rss_put mounted

# ---------------------------------------------------------------- open+read+close, stat
files=(tmpfs:"$tmpfs/bench/secret" minfs:"$mnt_minfs/bench/secret" minfs_single:"$mnt_minfs1/bench/secret"
       minfs_flush:"$mnt_minfsf/bench/secret" kcfs:"$mnt_default/bench/secret" kcfs_cache:"$mnt_cache/bench/secret" kcfs_big:"$mnt_default/big/$mid_account")
path_of() { local f; for f in "${files[@]}"; do [ "${f%%:*}" = "$1" ] && echo "${f#*:}"; done; return 0; }
record_loop() {  # record_loop KIND < readloop output: puts KIND.NAME.median_us=... per file
    local kind=$1 line name kv f
    while read -r line; do
        name=unknown
        for f in "${files[@]}"; do
            [[ "$line" == "path=${f#*:} "* ]] && name=${f%%:*}
        done
        for kv in $line; do
            case "$kv" in median_us=*|p90_us=*|mean_us=*|min_us=*|ops=*) put "$kind.$name.${kv%%=*}" "${kv#*=}" ;; esac
        done
    done
}
log "open+read+close: $read_n per file on tmpfs, minfs, minfs -s, minfs --flush, keychainfs, keychainfs kernel_cache (10 interleaved rounds)"
timeout 900 "$rl" read -b 32 -n "$read_n" -r 10 -w 500 "$(path_of tmpfs)" "$(path_of minfs)" "$(path_of minfs_single)" \
    "$(path_of minfs_flush)" "$(path_of kcfs)" "$(path_of kcfs_cache)" |
    tee "$work/read.txt" | record_loop read
log "open+read+close of big/$mid_account (in a directory of $big): $big_read_n times"
timeout 600 "$rl" read -b 32 -n "$big_read_n" -r 1 -w 5 "$(path_of kcfs_big)" | record_loop read
log "stat: $stat_n per file (10 interleaved rounds)"
paths=(); for f in "${files[@]}"; do paths+=("${f#*:}"); done
timeout 300 "$rl" stat -n "$stat_n" -r 10 -w 500 "${paths[@]}" | tee "$work/stat.txt" | record_loop stat

# Server CPU per operation, from the serving process's utime + stime (/proc/PID/stat): unlike
# latency, this hardly depends on what else the machine is doing.
cpu_ticks() { awk '{ print $14 + $15, $14, $15 }' "/proc/$1/stat"; }
per_op() { awk -v a="$1" -v b="$2" -v t="$clk_tck" -v n="$cpu_n" 'BEGIN { printf "%.2f", (b - a) * 1e6 / t / n }'; }
clk_tck=$(getconf CLK_TCK)
log "server CPU per open+read+close: $cpu_n each on minfs, minfs -s, keychainfs, keychainfs kernel_cache"
for name in minfs minfs_single kcfs kcfs_cache; do
    case $name in
        minfs) pid=$(cat "$work/minfs.pid") ;;
        minfs_single) pid=$(cat "$work/minfs-single.pid") ;;
        *) pid=$daemon_pid ;;
    esac
    read -r c0 u0 s0 < <(cpu_ticks "$pid")
    "$rl" read -b 32 -n "$cpu_n" -r 1 -w 0 "$(path_of "$name")" > /dev/null
    read -r c1 u1 s1 < <(cpu_ticks "$pid")
    put "cpu.$name.us_per_op" "$(per_op "$c0" "$c1")"
    put "cpu.$name.user_us_per_op" "$(per_op "$u0" "$u1")"
    put "cpu.$name.sys_us_per_op" "$(per_op "$s0" "$s1")"
done

# ---------------------------------------------------------------- lock, and a change, with entries known to the kernel
lock_ms() {  # times one `keychainfs lock-keychain` into $last_ms, checks the file is gone, unlocks
    local t0=$EPOCHREALTIME
    "$kc" lock-keychain
    last_ms=$(ms_since "$t0")
    if stat "$mnt_default/bench/secret" >/dev/null 2>&1; then die "bench/secret still visible right after lock-keychain"; fi
    echo "$passphrase" | "$kc" unlock-keychain
}
adds=0
add_ms() {  # times one `keychainfs add-generic-password` (a change: the daemon invalidates its mounts)
    local t0=$EPOCHREALTIME
    adds=$((adds + 1))
    printf x | "$kc" add-generic-password -s extra -a "a$adds" -w -
    last_ms=$(ms_since "$t0")
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
know() {  # makes the kernel know the first $1 names of the wide layout (lstat of each)
    local n=$(( ($1 + per_service - 1) / per_service )) i t0=$EPOCHREALTIME
    for ((i = 0; i < n; i++)); do echo "$mnt_default/w$i"; done | xargs "$rl" ls -n 1 -r 1 -w 0 > /dev/null
    last_know_ms=$(ms_since "$t0")
}
log "lock-keychain and add-generic-password with ~0 entries known (3 times each)"
l=(); for _ in 1 2 3; do lock_ms; l+=("$last_ms"); done; put lock.none.ms "$(median "${l[@]}")"
l=(); for _ in 1 2 3; do add_ms; l+=("$last_ms"); done; put add.none.ms "$(median "${l[@]}")"
log "the same with $known_small entries known (lstat of $known_small names before each)"
l=(); k=(); for _ in 1 2 3; do know "$known_small"; k+=("$last_know_ms"); lock_ms; l+=("$last_ms"); done
put lock.small.ms "$(median "${l[@]}")"; put know.small.ms "$(median "${k[@]}")"
l=(); for _ in 1 2 3; do know "$known_small"; add_ms; l+=("$last_ms"); done; put add.small.ms "$(median "${l[@]}")"
log "the same with $wide entries known (lstat of all $wide names in $wide_services directories before each)"
know "$wide"; put know.big.ms "$last_know_ms"; rss_put known; lock_ms; put lock.big.ms "$last_ms"
know "$wide"; add_ms; put add.big.ms "$last_ms"

# ---------------------------------------------------------------- ls -l of the big service
put_ls() {  # put_ls PREFIX < readloop ls output
    local line kv
    while read -r line; do
        for kv in $line; do case "$kv" in median_us=*|min_us=*|entries=*|complete=*) put "$1.${kv%%=*}" "${kv#*=}" ;; esac; done
    done
}
log "ls -l of big ($big accounts): readdir + lstat of each, cold (after a lock and unlock), within $ls_budget s"
lock_ms   # drops every cached name, so the listing starts cold
timeout $((ls_budget + 120)) "$rl" ls -n 1 -r 1 -t "$ls_budget" "$mnt_default/big" | tee "$work/ls.txt" | put_ls ls.kcfs.cold
rss_put listed
if grep -q 'complete=1' "$work/ls.txt"; then
    log "ls -l of big again (2 times) and GNU ls -l once"
    timeout $((ls_budget * 3)) "$rl" ls -n 2 -r 1 "$mnt_default/big" | put_ls ls.kcfs.warm
    t0=$EPOCHREALTIME; timeout $((ls_budget * 2)) ls -l "$mnt_default/big" > "$work/ls-l.txt"
    put ls.kcfs.gnu_ms "$(ms_since "$t0")"
    put ls.kcfs.gnu_lines "$(($(wc -l < "$work/ls-l.txt") - 1))"
else
    log "the listing did not finish within $ls_budget s: projecting; GNU ls -l skipped"
fi
mkdir "$tmpfs/big"
(cd "$tmpfs/big" && seq -f 'user%.0f' 0 $((big - 1)) | xargs touch)
"$rl" ls -n 3 -r 1 "$tmpfs/big" | put_ls ls.tmpfs
t0=$EPOCHREALTIME; ls -l "$tmpfs/big" > /dev/null; put ls.tmpfs.gnu_ms "$(ms_since "$t0")"

# ---------------------------------------------------------------- the CLI per invocation
log "CLI: find-generic-password -w vs cat of the tmpfs file, $cli_runs runs each (hyperfine)"
hyperfine -N --style none --warmup 10 --runs "$cli_runs" --export-json "$work/cli.json" \
    -n cat "cat $tmpfs/bench/secret" \
    -n hello "$bin/swift-hello" \
    -n help "$kc help" \
    -n find "$kc find-generic-password -s bench -a secret -w" > /dev/null 2>&1
$python - "$work/cli.json" >> "$res" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"cli.{r['command']}.median_ms={r['median'] * 1000:.3f}")
    print(f"cli.{r['command']}.mean_ms={r['mean'] * 1000:.3f}")
    print(f"cli.{r['command']}.runs={len(r['times'])}")
PY

# ---------------------------------------------------------------- the socket
socket_run() {  # socket_run NAME ARGS...
    local name=$1; shift
    "$kcbench" socket --vault "$KEYCHAINFS_VAULT" --seconds "$socket_seconds" "$@" | tr ' ' '\n' |
        sed -n "s/^\(rate\|median_us\|p90_us\|ops\|errors\)=/socket.$name.\1=/p" >> "$res"
}
log "socket: copyMatching r_Data for $socket_seconds s: 1 client, 8 clients, 1 client over random accounts of big"
socket_run c1 --service bench --account secret --clients 1
socket_run c8 --service bench --account secret --clients 8
socket_run c1_random --service big --accounts "$big" --prefix user --clients 1
log "SecItemCopyMatching through import Security for $socket_seconds s: 1 and 8 threads"
for n in 1 8; do
    "$kcbench" secitem --service bench --account secret --threads "$n" --seconds "$socket_seconds" | tr ' ' '\n' |
        sed -n "s/^\(rate\|ops\|errors\)=/secitem.t$n.\1=/p" >> "$res"
done

# ---------------------------------------------------------------- daemon memory
put daemon_rss_kib "$(awk '/^VmRSS/ { print $2 }' "/proc/$daemon_pid/status")"
put daemon_hwm_kib "$(awk '/^VmHWM/ { print $2 }' "/proc/$daemon_pid/status")"

# ---------------------------------------------------------------- daemon start, with the audit log this run wrote
log "daemon start (stop, then lock-keychain, which starts it) with the audit log of this run"
put audit_lines "$(wc -l < "$KEYCHAINFS_VAULT.audit" 2>/dev/null || echo 0)"
put audit_bytes "$(stat -c %s "$KEYCHAINFS_VAULT.audit" 2>/dev/null || echo 0)"
"$kc" stop
daemon_pid=""   # gone, with its mounts
l=(); for _ in 1 2 3; do
    t0=$EPOCHREALTIME; "$kc" lock-keychain; l+=("$(ms_since "$t0")"); "$kc" stop
done
put daemon_start.end_ms "$(median "${l[@]}")"

# ---------------------------------------------------------------- in-process benchmark
log "in-process: keychainfs-bench --quick"
"$kcbench" --quick --dir "$work/inproc" > "$work/inproc.txt" 2>&1 ||
    { tail -20 "$work/inproc.txt" >&2; die "keychainfs-bench --quick failed"; }
put measure_seconds "$(elapsed "$measure_started")"
put total_seconds "$(elapsed "$run_started")"

# ---------------------------------------------------------------- report
doc_args=()
((write_doc)) && doc_args=(--doc "$root/docs/performance.md" --plot "$root/docs/performance-read-latency.png" \
                           --analysis "$root/bench/analysis.md")
$python "$root/bench/report.py" --results "$res" --inproc "$work/inproc.txt" "${doc_args[@]}"
log "done"
