#!/usr/bin/env bash
# Sets up a machine for keychainfs, builds it, and runs the demo against a fresh vault.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product keychainfs-demo
dir=$(mktemp -d /tmp/keychainfs-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT
.build/release/keychainfs-demo "$dir"
