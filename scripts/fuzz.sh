#!/usr/bin/env bash
# Builds keychainfs's libFuzzer targets (Fuzz/) and runs each for a fixed time.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

all_targets=(FuzzQuery FuzzMessages FuzzFileNames FuzzVaultHeader FuzzCredentialInput FuzzSealedKey FuzzAgentMessages)

usage() {
    cat <<EOF
usage: scripts/fuzz.sh [--seconds N | --ci] [--scratch-path DIR] [--out DIR] [--build-only | --no-build] [TARGET...]

Builds the fuzz targets in Fuzz/ with -sanitize=fuzzer,address (release, own scratch path) and
runs each for N seconds, starting from the seed corpus in Fuzz/Corpus/<target>/. Prints one line
per target; exits 1 if any target crashed, hung, leaked or ran out of memory, 2 on a usage error.

  --seconds N          run each target N seconds (default 60)
  --ci                 the CI run: 20 seconds each
  --scratch-path DIR   SwiftPM scratch path for the build (default /tmp/fuzz-build)
  --out DIR            working corpus, logs and crash inputs (default /tmp/fuzz-out)
  --build-only         build, do not run
  --no-build           run the targets last built in the scratch path
  -h, --help           this text

Targets: ${all_targets[*]} (default: all). Crash, timeout and OOM inputs are saved as
DIR/crashes/<target>/crash-<sha1> (timeout-, oom-, leak-); replay one with
  /tmp/fuzz-build/release/<target> FILE
New inputs go to DIR/corpus/<target>; Fuzz/Corpus is read, never written. docs/fuzzing.md
has the longer run and what the fuzzers found.
EOF
}

seconds=60
scratch=/tmp/fuzz-build
out=/tmp/fuzz-out
build_only=0
no_build=0
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --ci) seconds=20 ;;
        --seconds) [[ $# -ge 2 && "$2" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --seconds needs a positive number" >&2; exit 2; }
                   seconds=$2; shift ;;
        --scratch-path) [[ $# -ge 2 ]] || { echo "fuzz.sh: --scratch-path needs a directory" >&2; exit 2; }
                        scratch=$2; shift ;;
        --out) [[ $# -ge 2 ]] || { echo "fuzz.sh: --out needs a directory" >&2; exit 2; }
               out=$2; shift ;;
        --build-only) build_only=1 ;;
        --no-build) no_build=1 ;;
        Fuzz*) [[ " ${all_targets[*]} " == *" $1 "* ]] || { echo "fuzz.sh: no target $1" >&2; exit 2; }
               targets+=("$1") ;;
        *) echo "fuzz.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

# Each product on its own: building the whole Fuzz package would also build the root package's
# executables with the fuzzer runtime, which have no fuzz entry point.
mkdir -p "$scratch"
build_start=$SECONDS
for t in "${targets[@]}"; do
    [[ $no_build -eq 0 ]] || break
    if ! swift build -c release --package-path Fuzz --scratch-path "$scratch" --product "$t" \
        -Xswiftc -sanitize=fuzzer,address >"$scratch/fuzz-$t.build.log" 2>&1; then
        grep -E "error:" "$scratch/fuzz-$t.build.log" | head -20 >&2 || true
        echo "fuzz.sh: building $t failed; log in $scratch/fuzz-$t.build.log" >&2
        exit 1
    fi
done
[[ $no_build -eq 1 ]] || echo "fuzz: built ${#targets[@]} targets in $((SECONDS - build_start)) s"
[[ $build_only -eq 0 ]] || exit 0

bin="$scratch/release"
failed=0
for t in "${targets[@]}"; do
    if [[ ! -x "$bin/$t" ]]; then
        echo "$t: FAILED (not built in $scratch)"; failed=1; continue
    fi
    mkdir -p "$out/corpus/$t" "$out/crashes/$t" "$out/logs"
    log="$out/logs/$t.log"
    before=$(ls "$out/crashes/$t" | wc -l)
    dict=()
    [[ -f "Fuzz/Dictionaries/$t.dict" ]] && dict=(-dict="Fuzz/Dictionaries/$t.dict")
    set +e
    # The first corpus directory receives new inputs; the checked-in seeds are only read.
    # SWIFT_BACKTRACE: a trap goes straight to libFuzzer, which saves the input, instead of
    # through Swift's backtracer (slow, and its memory reader trips AddressSanitizer).
    SWIFT_BACKTRACE=enable=no "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$out/crashes/$t/" "${dict[@]}" \
        "$out/corpus/$t" "Fuzz/Corpus/$t" >"$log" 2>&1
    status=$?
    set -e
    # A crash in the first inputs leaves no coverage line: none of these may end the script.
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1 || true)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
    corpus=$(ls "$out/corpus/$t" | wc -l)
    saved=$(ls -t "$out/crashes/$t" | head -1 || true)
    if [[ $status -eq 0 && $(ls "$out/crashes/$t" | wc -l) -eq $before ]]; then
        echo "$t: ok, ${runs:-?} inputs in ${seconds} s, coverage ${cov:-?}, corpus $corpus"
    else
        failed=1
        what=$(grep -m1 -oE 'ERROR: libFuzzer: [a-z -]+|ERROR: AddressSanitizer: [a-z-]+|Fatal error: .*|invariant broken: .*' "$log" || echo "exit $status")
        echo "$t: FAILED ($what), input ${saved:+$out/crashes/$t/$saved}, log $log"
    fi
done
exit $failed
