#!/usr/bin/env bash
# Builds keychainfs and runs every test suite (XCTest), then prints one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
swift test --skip-build --disable-swift-testing 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# XCTest prints "Executed N tests, with F failures" per bundle and once for all of them.
summary=$(grep -E '^[[:space:]]*Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -1 || true)
total=$(sed -E 's/.*Executed ([0-9]+) tests?.*/\1/' <<<"$summary")
failed=$(sed -E 's/.*with ([0-9]+) failures?.*/\1/' <<<"$summary")
if [[ -z "$summary" || "$total" == "0" ]]; then
    echo "tests: no test ran" >&2
    exit 1
fi
echo "tests: $((total - failed)) passed, $failed failed"
exit "$status"
