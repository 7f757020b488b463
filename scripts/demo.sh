#!/usr/bin/env bash
# Walks a fresh vault through its life: create, add secrets of two protection classes, mount the
# vault and read them as files, lock (the WhenUnlocked file vanishes), unlock, and check that the
# vault file holds none of the secrets or names. Everything runs in a scratch directory with its
# own daemon and mount, which are removed at the end. Mounting needs root (or FUSE rights for the
# user).
# With the Debian package installed (keychainfs in /usr/bin) it runs those binaries and needs no
# toolchain. Otherwise, or with --build, it installs what building needs (scripts/setup.sh, not the
# tests' packages) and builds the release binaries first: 3 to 4 minutes on 2 cores the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" != "--build" ]] && [ -x /usr/bin/keychainfs ] && [ -x /usr/bin/keychainfs-daemon ]; then
    bin=/usr/bin/keychainfs
    echo "Using the installed package: $($bin --version) (scripts/demo.sh --build builds this checkout instead)" >&2
else
    scripts/setup.sh
    export PATH="/opt/swift/usr/bin:$PATH"
    echo "Building keychainfs and keychainfs-daemon (release) first: 3 to 4 minutes on 2 cores the first time," \
         "seconds after that. With the Debian package installed (scripts/package.sh) nothing is built." >&2
    # In a subshell: the directory scripts/swiftpm-tmpdir.sh makes is for SwiftPM alone.
    bin=$(source scripts/swiftpm-tmpdir.sh; trap swiftpm_tmpdir_remove EXIT
          # keychainfs runs the daemon beside it
          swift build -c release --product keychainfs >&2 && swift build -c release --product keychainfs-daemon >&2 &&
              swift build -c release --show-bin-path)/keychainfs
fi

dir=$(mktemp -d /tmp/keychainfs-demo.XXXXXX)
chmod 755 "$dir"
export KEYCHAINFS_VAULT="$dir/demo.vault" KEYCHAINFS_RUNTIME_DIR="$dir/run" KEYCHAINFS_DEVICE_KEY="$dir/device.key"
mnt="$dir/mnt"
mkdir "$mnt"
cleanup() {
    "$bin" unmount "$mnt" >/dev/null 2>&1 || umount -l "$mnt" 2>/dev/null || true
    "$bin" stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT
kc() { echo "\$ keychainfs $*" >&2; "$bin" "$@"; }
status() { local rc=0; "$@" || rc=$?; echo "  (exit status $rc)" >&2; }

echo "demo passphrase" | kc create-keychain --kdf interactive
echo -n "s3cret-web-value" | kc add-generic-password -s web -a app -l "demo web" -w -
echo -n "s3cret-backup-value" | kc add-generic-password -s backup -a nightly --accessible AfterFirstUnlock -w -
kc find-generic-password -s web -a app -w
kc find-generic-password -s backup -w
kc show-keychain-info
kc mount "$mnt"
echo "\$ ls -l $mnt/*" >&2; ls -l "$mnt"/*
echo "\$ cat $mnt/web/app" >&2; cat "$mnt/web/app"; echo
echo "\$ getfattr -d $mnt/web/app" >&2; getfattr -d "$mnt/web/app" 2>/dev/null || true
kc lock-keychain
echo "After the lock the WhenUnlocked secret is out of reach; the AfterFirstUnlock one is not:" >&2
status kc find-generic-password -s web -a app -w
status kc find-generic-password -s backup -w
echo "\$ ls -l $mnt/*" >&2; ls -l "$mnt"/*
echo "\$ cat $mnt/web/app" >&2; status cat "$mnt/web/app"
echo "A wrong passphrase is refused (and the next attempt is delayed):" >&2
status sh -c "echo wrong | '$bin' unlock-keychain"
echo "demo passphrase" | kc unlock-keychain
kc find-generic-password -s web -a app -w
echo "\$ cat $mnt/web/app" >&2; cat "$mnt/web/app"; echo
echo "Writing through the mount: echo -n rotated > $mnt/web/app" >&2
echo -n rotated > "$mnt/web/app"
kc find-generic-password -s web -a app -w
kc unmount "$mnt"
echo "Scanning the vault file, its WAL and SHM for the secrets and names:" >&2
if grep -a -l -e s3cret -e "demo web" -e backup -e nightly "$dir"/demo.vault* ; then
    echo "  FOUND plaintext in the files above" >&2; exit 1
fi
echo "  none found" >&2
kc stop
