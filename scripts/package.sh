#!/usr/bin/env bash
# Makes the Debian package keychainfs_<version>_<arch>.deb with dpkg-deb:
#   /usr/bin/keychainfs, keychainfs-daemon, git-credential-keychainfs, docker-credential-keychainfs
#       release builds carrying the Swift runtime (--static-swift-stdlib) and no RUNPATH
#       (--disable-local-rpath): they need Debian's libraries only, which Depends names (dpkg-shlibdeps)
#   /usr/sbin/mount.fuse.keychainfs      so mount -t fuse.keychainfs and fstab lines work
#   /lib/systemd/system/keychainfs@.service, /usr/lib/systemd/user/keychainfs-ssh-agent.*
#   /usr/lib/keychainfs/pam-unlock       the pam_exec hook
#   /usr/share/dbus-1/services/org.freedesktop.secrets.keychainfs.service
#       D-Bus activation of `keychainfs secret-service` (named apart from gnome-keyring's file)
#   /usr/share/keychainfs/run-keychain.mount   the mount unit for /run/keychain, to copy
#   /usr/share/man/man1, man8            pages made by `keychainfs help --man PAGE`
#   /usr/share/bash-completion/completions/keychainfs
#   /usr/share/doc/keychainfs            README, docs/*.md, copyright, changelog
# The version comes from Sources/KeychainProtocol/Release.swift (what `keychainfs --version` prints).
# Then lintian checks the package when it is installed (scripts/setup.sh --tests): an error fails.
# Usage: scripts/package.sh [--output DIR]   (DIR defaults to the checkout); prints the .deb's path.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
out=$repo
if [[ "${1:-}" == "--output" ]]; then out=$(cd "$2" && pwd); fi
version=$(sed -n 's/^ *public static let version = "\([^"]*\)".*/\1/p' Sources/KeychainProtocol/Release.swift)
[ -n "$version" ] || { echo "package.sh: no version in Sources/KeychainProtocol/Release.swift" >&2; exit 1; }
arch=$(dpkg --print-architecture)
maintainer=${KEYCHAINFS_MAINTAINER:-"keychainfs developers <keychainfs@example.org>"}
export PATH="/opt/swift/usr/bin:$PATH"

products=(keychainfs keychainfs-daemon git-credential-keychainfs docker-credential-keychainfs)
echo "package.sh: building ${products[*]} (release, Swift runtime inside): 10 to 15 minutes on 2 cores the first time" >&2
# Bound at load (full RELRO): a daemon that holds keys has no writable GOT. Built in its own
# directory, so the release build of demo.sh and install.sh (other flags) is not rebuilt after it.
flags=(-c release --scratch-path .build/package --static-swift-stdlib --disable-local-rpath
       -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)
source scripts/swiftpm-tmpdir.sh
trap swiftpm_tmpdir_remove EXIT
for p in "${products[@]}"; do
    nice -n 19 swift build "${flags[@]}" --product "$p" >&2
done
bin=$(swift build "${flags[@]}" --show-bin-path)

umask 022
work=$(mktemp -d)
trap 'rm -rf "$work"; swiftpm_tmpdir_remove' EXIT
root=$work/keychainfs_${version}_$arch
mkdir -p "$root/DEBIAN"

# The binaries, stripped, and a check that each needs only libraries a Debian package holds.
for p in "${products[@]}"; do
    install -D -m 0755 "$bin/$p" "$root/usr/bin/$p"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/$p"
    while read -r lib; do
        owner=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || true)
        if [ -z "$owner" ] || [[ "$lib" == /opt/* ]] || [[ "$(basename "$lib")" == libswift* ]]; then
            echo "package.sh: $p needs $lib, which no Debian package holds" >&2
            exit 1
        fi
    done < <(ldd "$root/usr/bin/$p" | awk '$2 == "=>" { print $3 } $1 ~ /^\// { print $1 }')
    if ldd "$root/usr/bin/$p" | grep -q 'not found'; then
        ldd "$root/usr/bin/$p" >&2; echo "package.sh: $p has a library not found" >&2; exit 1
    fi
done
mkdir -p "$root/usr/sbin"
ln -s ../bin/keychainfs "$root/usr/sbin/mount.fuse.keychainfs"

# The units, the PAM hook and the D-Bus file name /usr/local paths (mount-helpers/install.sh): here /usr.
relocate() { sed -e 's|/usr/local/bin/|/usr/bin/|g' -e 's|/usr/local/lib/keychainfs/|/usr/lib/keychainfs/|g' \
                 -e 's|/usr/local/share/doc/keychainfs/|/usr/share/doc/keychainfs/|g' "$1"; }
install_relocated() { install -d "$(dirname "$3")"; relocate "$2" > "$3"; chmod "$1" "$3"; }
install_relocated 0644 mount-helpers/systemd/keychainfs@.service "$root/lib/systemd/system/keychainfs@.service"
install_relocated 0644 mount-helpers/systemd/keychainfs-ssh-agent.socket "$root/usr/lib/systemd/user/keychainfs-ssh-agent.socket"
install_relocated 0644 mount-helpers/systemd/keychainfs-ssh-agent.service "$root/usr/lib/systemd/user/keychainfs-ssh-agent.service"
install_relocated 0644 mount-helpers/systemd/run-keychain.mount "$root/usr/share/keychainfs/run-keychain.mount"
install_relocated 0644 mount-helpers/dbus/org.freedesktop.secrets.service \
    "$root/usr/share/dbus-1/services/org.freedesktop.secrets.keychainfs.service"
install_relocated 0755 mount-helpers/pam-unlock "$root/usr/lib/keychainfs/pam-unlock"
install -D -m 0644 mount-helpers/bash-completion/keychainfs "$root/usr/share/bash-completion/completions/keychainfs"

# The manual pages, from the binary just built: the same text as its help.
for page in keychainfs:1 keychainfs-daemon:8 mount.fuse.keychainfs:8 git-credential-keychainfs:1 docker-credential-keychainfs:1; do
    name=${page%:*} section=${page#*:}
    install -d "$root/usr/share/man/man$section"
    "$root/usr/bin/keychainfs" help --man "$name" | gzip -9n > "$root/usr/share/man/man$section/$name.$section.gz"
done

doc=$root/usr/share/doc/keychainfs
install -d "$doc"
install -m 0644 README.md docs/cli.md docs/operations.md docs/filesystem.md docs/containers.md docs/credential-helpers.md \
    docs/secret-service.md docs/ssh-agent.md docs/tpm.md docs/sync.md docs/threat-model.md "$doc/"
first=$(git log --reverse --format=%ad --date=format:%Y 2>/dev/null | head -1) last=$(date -u +%Y)
years=${first:-$last}; [ "$years" = "$last" ] || years="$years-$last"
cat > "$doc/copyright" <<EOF
keychainfs: Apple's Keychain rebuilt for Linux in Swift.

Copyright (C) $years the keychainfs developers.

The binaries include the Swift runtime and standard library (Copyright Apple Inc. and the Swift
project authors), licensed under the Apache License 2.0 with the Runtime Library Exception:
see /usr/share/common-licenses/Apache-2.0.

keychainfs itself has no license statement yet: all rights reserved by its authors.
EOF
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'keychainfs (%s) unstable; urgency=medium\n\n  * Release %s, built from %s.\n\n -- %s  %s\n' \
    "$version" "$version" "$(git rev-parse --short HEAD 2>/dev/null || echo a source tree)" "$maintainer" "$date" \
    | gzip -9n > "$doc/changelog.gz"

# Depends: the packages of the libraries the binaries link, as dpkg-shlibdeps finds them.
mkdir -p "$work/shlibs/debian"
printf 'Source: keychainfs\n\nPackage: keychainfs\nArchitecture: any\n' > "$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O "${products[@]/#/$root/usr/bin/}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

cat > "$root/DEBIAN/control" <<EOF
Package: keychainfs
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: fuse3
Suggests: pinentry-curses | pinentry
Section: utils
Priority: optional
Description: Apple's Keychain for Linux: an encrypted vault served as files
 keychainfs keeps passwords, keys and certificates in one encrypted SQLite
 vault with the classes, attributes and protection classes of Apple's
 Keychain, served by a daemon per vault. Its CLI follows macOS's security
 tool; a FUSE mount shows items as files that vanish when the vault locks.
 .
 Also included: git's and docker's credential helpers, the freedesktop
 Secret Service, an OpenSSH agent, systemd units, a PAM hook that unlocks
 at login, and the mount helper for /etc/fstab.
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

deb=$out/keychainfs_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
if command -v lintian >/dev/null; then
    report=$(lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v '^running with root privileges' || true)
    [ -z "$report" ] || echo "$report" >&2
    if grep -q '^E: ' <<<"$report"; then echo "package.sh: lintian reports errors in $deb" >&2; exit 1; fi
else
    echo "package.sh: lintian is not installed (scripts/setup.sh --tests): not checked" >&2
fi
echo "$deb"
