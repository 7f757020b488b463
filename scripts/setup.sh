#!/usr/bin/env bash
# Installs the C libraries and tools keychainfs builds against (Debian 12 packages).
set -euo pipefail
packages=(fuse3 libfuse3-dev libsodium-dev libsqlite3-dev libssl-dev openssl pkg-config attr python3 python3-cryptography)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi
export PATH="/opt/swift/usr/bin:$PATH"
command -v swift >/dev/null || { echo "swift not found (expected under /opt/swift)" >&2; exit 1; }
