#!/usr/bin/env bash
# The CommonCrypto benchmark (issue 30, "Benchmark"; docs/commoncrypto.md): `CC_SHA256` and
# `CCCrypt` (AES-256-CBC with PKCS#7 padding) over 16 KiB buffers, one call per buffer
# (`keychainfs-bench commoncrypto`), against `openssl speed -bytes 16384 -seconds S sha256` and
# `openssl speed -evp aes-256-cbc -bytes 16384 -seconds S` in the same run. Each side runs
# --rounds R times (default 3), interleaved (ours, openssl, ...); the medians in MB/s (10^6
# bytes, openssl speed's unit) and the ratio ours/openssl are printed (target: 0.8 or more).
# Both sides divide by the CPU time they used (openssl speed's default, without -elapsed; ours
# by CLOCK_THREAD_CPUTIME_ID), so that other work on a shared machine does not halve one side;
# our wall-clock rates are printed beside. CCCrypt makes, keys and frees a cryptor per call as
# Apple's does; openssl speed keys once. The load average is printed at the start and the end.
#
#   bench/commoncrypto.sh [--seconds S] [--rounds R] [--no-build]
#
# keychainfs-bench is built in release (`swift build -c release --product keychainfs-bench`)
# into KEYCHAINFS_BENCH_SCRATCH (default /tmp/perf-build, as bench/run.sh), or taken from there
# with --no-build. It prints the results; it writes no file of the repository. Exits 1 when a
# side failed to run.
set -euo pipefail

usage() { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; }
seconds=3; rounds=3; build=1
while (($#)); do
    case "$1" in
        --seconds) shift; seconds=${1:?--seconds needs a number} ;;
        --rounds) shift; rounds=${1:?--rounds needs a number} ;;
        --no-build) build=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/commoncrypto.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/commoncrypto.sh: --seconds takes a positive whole number (openssl speed's)" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "bench/commoncrypto.sh: --rounds takes a positive number" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
scratch=${KEYCHAINFS_BENCH_SCRATCH:-/tmp/perf-build}
log() { echo "== $*" >&2; }
die() { echo "bench/commoncrypto.sh: $*" >&2; exit 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
command -v openssl >/dev/null || die "openssl is not installed"

if ((build)); then
    log "building keychainfs-bench (release, scratch path $scratch)"
    build_log=$(mktemp /tmp/kcfs-cc-bench.XXXXXX)
    trap 'rm -f "$build_log"' EXIT
    (cd "$src" && swift build -c release --scratch-path "$scratch" --product keychainfs-bench >"$build_log" 2>&1) ||
        { tail -30 "$build_log" >&2; die "swift build failed (--no-build uses the binary already built)"; }
fi
bench="$scratch/release/keychainfs-bench"
[ -x "$bench" ] || die "no keychainfs-bench in $scratch/release"

# field NAME LINE: the value of NAME=... in keychainfs-bench's line.
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p"; }
# openssl speed's figure for one algorithm, in MB/s (it prints 1000s of bytes per second).
openssl_mbps() {
    openssl speed -bytes 16384 -seconds "$seconds" "$@" 2>/dev/null |
        awk 'tolower($1) == "sha256" || tolower($1) == "aes-256-cbc" { sub(/k$/, "", $2); printf "%.1f", $2 / 1000; found = 1 }
             END { exit !found }'
}

echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
ours_sha=(); ours_aes=(); wall_sha=(); wall_aes=(); theirs_sha=(); theirs_aes=()
for ((r = 1; r <= rounds; r++)); do
    log "round $r of $rounds"
    line=$("$bench" commoncrypto --seconds "$seconds" --bytes 16384) || die "keychainfs-bench commoncrypto failed"
    ours_sha+=("$(field sha256_cpu_mbps "$line")"); ours_aes+=("$(field aes_cpu_mbps "$line")")
    wall_sha+=("$(field sha256_mbps "$line")"); wall_aes+=("$(field aes_mbps "$line")")
    v=$(openssl_mbps sha256) || die "openssl speed sha256 failed"
    theirs_sha+=("$v")
    v=$(openssl_mbps -evp aes-256-cbc) || die "openssl speed -evp aes-256-cbc failed"
    theirs_aes+=("$v")
done
echo "load average at end:   $(cut -d' ' -f1-3 /proc/loadavg)"

sha_ours=$(median "${ours_sha[@]}"); sha_theirs=$(median "${theirs_sha[@]}")
aes_ours=$(median "${ours_aes[@]}"); aes_theirs=$(median "${theirs_aes[@]}")
echo
echo "16 KiB buffers, $seconds s per run, medians of $rounds (MB/s per CPU second, 10^6 bytes; target ratio >= 0.8)"
printf '%-28s %12s %12s %8s %16s\n' "" "CommonCrypto" "openssl" "ratio" "ours, wall clock"
printf '%-28s %12s %12s %8s %16s\n' "CC_SHA256 / sha256" "$sha_ours" "$sha_theirs" "$(ratio "$sha_ours" "$sha_theirs")" \
    "$(median "${wall_sha[@]}")"
printf '%-28s %12s %12s %8s %16s\n' "CCCrypt / -evp aes-256-cbc" "$aes_ours" "$aes_theirs" "$(ratio "$aes_ours" "$aes_theirs")" \
    "$(median "${wall_aes[@]}")"
echo "runs: CC_SHA256 ${ours_sha[*]}; sha256 ${theirs_sha[*]}; CCCrypt ${ours_aes[*]}; aes-256-cbc ${theirs_aes[*]}"
