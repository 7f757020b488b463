#!/usr/bin/env bash
# Instructions per socket lookup (copyMatching r_Data of one item by service and account, the
# lookup of bench/run.sh's `socket` runs), the daemon's and the client's, counted by callgrind:
# unlike a rate or a CPU time, a count does not move with what else the machine runs.
#
#   bench/callgrind-lookup.sh [--bin DIR] [--seconds N] [--keep]
#
# DIR holds release builds of keychainfs, keychainfs-daemon and keychainfs-bench (default
# .build/release). They are copied with their debug information stripped (valgrind cannot
# read Swift's). The daemon runs under callgrind on a fresh vault of one item; its counters are
# zeroed after a warm-up and dumped after N seconds (default 10) of one client's lookups, so the
# count is the lookups' alone. The client's count is the difference of two runs of the bench
# under callgrind (1 and 6 seconds) against an uninstrumented daemon, which takes away its
# start-up. Prints daemon_ir_per_lookup= and client_ir_per_lookup=, and leaves the daemon's
# profile for `callgrind_annotate --inclusive=yes` in the work directory with --keep.
set -euo pipefail

bin=.build/release seconds=10 keep=0
while (($#)); do
    case $1 in
        --bin) bin=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --keep) keep=1; shift ;;
        *) echo "usage: $0 [--bin DIR] [--seconds N] [--keep]" >&2; exit 2 ;;
    esac
done
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || { echo "$0: needs valgrind" >&2; exit 1; }

work=$(mktemp -d /tmp/kcfs-callgrind.XXXXXX)
daemon_pid=""
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
    "$work/bin/keychainfs" stop >/dev/null 2>&1 || true
    ((keep)) && echo "work directory: $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/bin" "$work/rt"
chmod 700 "$work/rt"
for b in keychainfs keychainfs-daemon keychainfs-bench; do objcopy --strip-debug "$bin/$b" "$work/bin/$b"; done
export KEYCHAINFS_VAULT=$work/bench.vault KEYCHAINFS_RUNTIME_DIR=$work/rt
kc=$work/bin/keychainfs bench=$work/bin/keychainfs-bench
passphrase=callgrind-lookup-passphrase

socket_gone() { for _ in $(seq 100); do compgen -G "$work/rt/*.sock" >/dev/null || return 0; sleep 0.2; done; return 1; }
ir_of() { callgrind_annotate "$1" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,; }
lookups() { "$bench" socket --vault "$KEYCHAINFS_VAULT" --service bench --account secret --clients 1 --seconds "$1" |
            tr ' ' '\n' | sed -n 's/^ops=//p'; }

echo "$passphrase" | "$kc" create-keychain --kdf interactive >/dev/null
echo "$passphrase" | "$kc" unlock-keychain >/dev/null 2>&1 || true
printf 'callgrind-lookup-secret' | "$kc" add-generic-password -s bench -a secret -w -
"$kc" stop >/dev/null
socket_gone

valgrind --tool=callgrind --callgrind-out-file="$work/daemon.cg" "$work/bin/keychainfs-daemon" daemon 2> "$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 600); do compgen -G "$work/rt/*.sock" >/dev/null && break; sleep 0.5; done
echo "$passphrase" | "$kc" unlock-keychain >/dev/null 2>&1 || true
lookups 2 >/dev/null                               # warm-up: caches, the reader, the audit line
callgrind_control -z "$daemon_pid" >/dev/null 2>&1
ops=$(lookups "$seconds")
callgrind_control -d "$daemon_pid" >/dev/null 2>&1
profile=$(ls -t "$work"/daemon.cg.* | head -1)
echo "daemon_lookups=$ops daemon_ir_per_lookup=$(( $(ir_of "$profile") / ops ))"
"$kc" stop >/dev/null
wait "$daemon_pid" 2>/dev/null || true
daemon_pid=""
mv "$profile" "$work/daemon-lookups.cg"

# The client against an uninstrumented daemon (started by the first request).
echo "$passphrase" | "$kc" unlock-keychain >/dev/null 2>&1 || true
declare -A cops cir
for s in 1 6; do
    cops[$s]=$(valgrind --tool=callgrind --callgrind-out-file="$work/client$s.cg" "$bench" socket --vault "$KEYCHAINFS_VAULT" \
        --service bench --account secret --clients 1 --seconds "$s" 2>/dev/null | tr ' ' '\n' | sed -n 's/^ops=//p')
    cir[$s]=$(ir_of "$work/client$s.cg")
done
echo "client_lookups=$((cops[6] - cops[1])) client_ir_per_lookup=$(( (cir[6] - cir[1]) / (cops[6] - cops[1]) ))"
