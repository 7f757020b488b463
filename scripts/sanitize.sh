#!/usr/bin/env bash
# Builds keychainfs and its tests with a sanitizer and runs every XCTest suite under it, then
# prints the same summary line as scripts/test.sh. Fails on any test failure or sanitizer report,
# including reports from the daemons and CLI processes the tests start.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export PATH="/opt/swift/usr/bin:$PATH"

usage() {
    cat <<'USAGE'
usage: scripts/sanitize.sh [--scratch-path DIR] address|thread [-- SWIFT-TEST-ARGS...]

Builds the package and its tests with --sanitize=KIND into DIR (default /tmp/sanitize-KIND) and
runs the whole XCTest suite there. Every sanitized process (the test runner, each `keychainfs`
command and each daemon, whose environment is scrubbed) writes its reports to DIR/reports;
they are printed at the end and any report fails the run.

Arguments after -- go to `swift test` (for example `-- --filter MountWriteTests`).

Suppressions: scripts/sanitizers/lsan.supp (address) and scripts/sanitizers/tsan.supp (thread).
Extra runtime options: ASAN_OPTIONS / LSAN_OPTIONS / TSAN_OPTIONS in the environment override
the compiled-in defaults, but only in processes that receive the environment (not daemons).
USAGE
}

kind="" scratch="" extra=()
while (($#)); do
    case "$1" in
        --) shift; extra=("$@"); break ;;
        -h|--help) usage; exit 0 ;;
        --scratch-path) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; scratch=$2; shift ;;
        --scratch-path=*) scratch=${1#*=} ;;
        address|thread) [[ -z "$kind" ]] || { usage >&2; exit 2; }; kind=$1 ;;
        *) usage >&2; exit 2 ;;
    esac
    shift
done
[[ -n "$kind" ]] || { usage >&2; exit 2; }
scratch=${scratch:-/tmp/sanitize-$kind}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd -P)
reports="$scratch/reports"
rm -rf "$reports"
mkdir -p "$reports"
chmod 1777 "$reports"      # tests run some commands as other users

# The daemon never sees the caller's environment, so every sanitized binary carries a default
# (Sources/CProcess/sanitizer_options.c): include the options file this script writes below.
# Changing the options therefore needs no rebuild. Paths must not contain ':' or '"'.
[[ "$scratch$repo" != *[:\"]* ]] || { echo "sanitize: paths must not contain ':' or '\"'" >&2; exit 2; }
options="$scratch/options"
mkdir -p "$options"
defines=()
case "$kind" in
    address)
        defines+=(-Xcc "-DKCFS_ASAN_OPTIONS=\"include_if_exists=$options/asan\"")
        defines+=(-Xcc "-DKCFS_LSAN_OPTIONS=\"include_if_exists=$options/lsan\"")
        # Reports from interceptors (a bad buffer handed to a libc call) are not fatal, so one run
        # finds them all; a bad access in instrumented code still ends the process. LeakSanitizer
        # checks each process at exit.
        printf '%s\n' "log_path=$reports/asan" detect_leaks=1 halt_on_error=0 abort_on_error=0 \
            >"$options/asan"
        printf '%s\n' "suppressions=$repo/scripts/sanitizers/lsan.supp" print_suppressions=0 >"$options/lsan"
        ;;
    thread)
        defines+=(-Xcc "-DKCFS_TSAN_OPTIONS=\"include_if_exists=$options/tsan\"")
        # Keep running after a report so one run finds every race; any report fails the run.
        printf '%s\n' "log_path=$reports/tsan" halt_on_error=0 second_deadlock_stack=1 \
            "suppressions=$repo/scripts/sanitizers/tsan.supp" print_suppressions=0 >"$options/tsan"
        ;;
esac
flags=(--sanitize="$kind" --scratch-path "$scratch" "${defines[@]}")

start=$SECONDS
swift build --build-tests "${flags[@]}"
build_time=$((SECONDS - start))

log="$scratch/test.log"
mounts_before=$(awk '$3 == "fuse.keychainfs"' /proc/mounts | sort)
start=$SECONDS
set +e
# Tests that cannot run under a sanitizer skip themselves, saying why.
KEYCHAINFS_SANITIZER=$kind swift test --skip-build --disable-swift-testing "${flags[@]}" "${extra[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
test_time=$((SECONDS - start))

# Daemons or mounts a sanitizer abort left behind. This build's daemons are ended (a failure);
# new keychainfs mounts are named but left alone, since other programs may mount meanwhile.
leftover=0
for p in /proc/[0-9]*; do
    exe=$(readlink "$p/exe" 2>/dev/null || true)
    if [[ "$exe" == "$scratch"/* ]]; then
        echo "sanitize: leftover process ${p#/proc/}: $(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" >&2
        kill -KILL "${p#/proc/}" 2>/dev/null || true
        leftover=1
    fi
done
new_mounts=$(comm -13 <(echo "$mounts_before") <(awk '$3 == "fuse.keychainfs"' /proc/mounts | sort))
if [[ -n "$new_mounts" ]]; then
    echo "sanitize: warning: keychainfs mounts that appeared during the run (check them):" >&2
    echo "$new_mounts" >&2
fi

# ThreadSanitizer ends a process (exit 66) when a thread finishes inside an interceptor, which is
# how libfuse stops its idle worker threads at unmount (pthread_cancel while they block reading
# /dev/fuse). Such a report is known and not counted when it is all the file holds and the thread
# was created by libfuse; every other report counts.
known_tsan_cancel() {
    grep -q '^ThreadSanitizer: thread T[0-9]* .*finished with ignores enabled, created at:' "$1" &&
        grep -q '#1 .*(libfuse3\.so' "$1" && ! grep -q 'WARNING: ThreadSanitizer' "$1"
}
found=0 known=0
for f in "$reports"/*; do
    [[ -s "$f" ]] || continue
    if [[ "$kind" == thread ]] && known_tsan_cancel "$f"; then
        known=$((known + 1))
        continue
    fi
    found=$((found + 1))
    echo "==== sanitizer report $f"
    cat "$f"
done
((known == 0)) || echo "sanitizer: $known known report(s) of libfuse worker threads cancelled at unmount (not counted)"

echo "build: ${build_time}s, tests: ${test_time}s (--sanitize=$kind)"
summary=$(grep -E '^[[:space:]]*Executed [0-9]+ tests?, with ' "$log" | tail -1 || true)
total=$(sed -nE 's/.*Executed ([0-9]+) tests?.*/\1/p' <<<"$summary")
skipped=$(sed -nE 's/.* ([0-9]+) tests? skipped.*/\1/p' <<<"$summary")
# XCTest's "N failures" counts failed assertions; count the failed test cases instead.
failed=$( (grep -E "^Test Case '.*' failed \(" "$log" || true) | sort -u | wc -l)
if [[ -z "$total" || "$total" == "0" ]]; then
    echo "tests: no test ran" >&2
    status=1
else
    echo "tests: $((total - ${failed:-0} - ${skipped:-0})) passed, ${failed:-0} failed, ${skipped:-0} skipped"
fi
if ((found > 0)); then
    echo "sanitizer: $found report file(s) in $reports" >&2
    status=1
fi
((leftover == 0)) || status=1
exit "$status"
