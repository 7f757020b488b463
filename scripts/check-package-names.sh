#!/usr/bin/env bash
# Builds a scratch package that has targets named like well-known Swift keychain packages and
# depends on this package's Security product: SwiftPM refuses a graph in which two packages
# declare the same target name, so this fails if one of ours collides with theirs.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
scratch=$(mktemp -d)
# SwiftPM also leaves a lock file in /tmp named after the build directory: ours goes too.
swiftpm_lock="/tmp/$(tr / _ <<<"$scratch/app/.build")"
trap 'rm -rf "$scratch"; rm -f "$swiftpm_lock.lock" "${swiftpm_lock}_workspace-state.json.lock"' EXIT
# A path dependency's identity is its folder's name, lowercased (docs/security-api.md).
identity=$(basename "$repo" | tr '[:upper:]' '[:lower:]')
names=(KeychainAccess Valet SimpleKeychain KeychainSwift Locksmith SAMKeychain)
mkdir -p "$scratch/app/Sources/app"
{
    echo '// swift-tools-version:5.9'
    echo 'import PackageDescription'
    echo 'let package = Package(name: "app",'
    echo "    dependencies: [.package(path: \"$repo\")],"
    echo '    targets: ['
    for n in "${names[@]}"; do echo "        .target(name: \"$n\"),"; done
    printf '        .executableTarget(name: "app", dependencies: [.product(name: "Security", package: "%s")' "$identity"
    for n in "${names[@]}"; do printf ', "%s"' "$n"; done
    echo '])])'
} > "$scratch/app/Package.swift"
for n in "${names[@]}"; do
    mkdir -p "$scratch/app/Sources/$n"
    echo "public let ${n}Marker = \"$n\"" > "$scratch/app/Sources/$n/$n.swift"
done
{
    echo 'import Security'
    for n in "${names[@]}"; do echo "import $n"; done
    echo 'let query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecReturnData as String: true]'
    echo 'var result: CFTypeRef?'
    echo 'print(SecItemCopyMatching(query as CFDictionary, &result), KeychainAccessMarker)'
} > "$scratch/app/Sources/app/main.swift"
if ! out=$(cd "$scratch/app" && swift build 2>&1); then
    echo "$out" | tail -20 >&2
    echo "package names: a package with targets named ${names[*]} cannot use keychainfs's Security product" >&2
    exit 1
fi
echo "package names: a package with targets named ${names[*]} builds against keychainfs's Security product"
