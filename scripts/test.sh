#!/usr/bin/env bash
# Builds keychainfs and runs every test suite (XCTest), prints one summary line, then checks that
# a package with targets named like well-known keychain packages can use ours (check-package-names.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
source scripts/swiftpm-tmpdir.sh
log=$(mktemp); build_log=$(mktemp)
trap 'rm -f "$log" "$build_log"; swiftpm_tmpdir_remove' EXIT
# The build must print no warning (CI fails on a new one). A file that built before is not
# compiled again, so an incremental build shows only the warnings of what changed; CI builds afresh.
set +e
swift build --build-tests 2>&1 | tee "$build_log"
build_status=${PIPESTATUS[0]}
set -e
((build_status == 0)) || exit "$build_status"
# A warning is a line `FILE:LINE:COL: warning: ...` or SwiftPM's `warning: ...` (not the
# excerpt lines under the first, which repeat it).
warnings=$(grep -E '(^|: )warning: ' "$build_log" | sort -u || true)
set +e
swift test --skip-build --disable-swift-testing 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# XCTest prints "Executed N tests, with [S tests skipped and] F failures" per bundle and
# once for all of them; the last such line is the total.
summary=$(grep -E '^[[:space:]]*Executed [0-9]+ tests?, with ' "$log" | tail -1 || true)
total=$(sed -nE 's/.*Executed ([0-9]+) tests?.*/\1/p' <<<"$summary")
# XCTest's "N failures" counts failed assertions; count the failed test cases instead.
failed=$(grep -cE "^Test Case '.*' failed \(" "$log" || true)
skipped=$(sed -nE 's/.* ([0-9]+) tests? skipped.*/\1/p' <<<"$summary")
if [[ -z "$total" || "$total" == "0" ]]; then
    echo "tests: no test ran" >&2
    exit 1
fi
echo "tests: $((total - ${failed:-0} - ${skipped:-0})) passed, ${failed:-0} failed, ${skipped:-0} skipped"
scripts/check-package-names.sh || status=1
if [[ -n "$warnings" ]]; then
    echo "build: $(grep -c . <<<"$warnings") warnings (none is allowed):" >&2
    echo "$warnings" >&2
    status=1
fi
exit "$status"
