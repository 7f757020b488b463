#!/usr/bin/env bash
# Builds the Debian package (scripts/package.sh) and installs it as a new user would, in a fresh
# Debian 12 root made by `debootstrap --variant=minbase bookworm`, where no Swift toolchain and no
# build dependency is: `apt-get install ./keychainfs_*.deb` pulls the runtime libraries alone;
# the installed binaries answer `help` and `--version`, create a vault, store and read a secret,
# lock and unlock it, mount it (also with mount -t fuse.keychainfs) and read the secret as a
# file, and run scripts/demo.sh (the README's first command) without building; `apt-get purge
# keychainfs` then leaves none of the package's files and no file named after keychainfs.
# The bootstrapped root is kept for the day in /var/cache/keychainfs-tests (a 200 MB tarball);
# the first run of a day fetches it from deb.debian.org (1 to 5 minutes). With the package and the
# root at hand the test takes about 20 seconds; building the package the first time, 10 minutes.
# Usage: scripts/test-package.sh [--deb PATH]   (a package already built; otherwise it builds one)
# It skips, saying why, only when a bookworm root cannot be made here (not root, no debootstrap,
# no route to the archive).
set -euo pipefail
cd "$(dirname "$0")/.."
skip() { echo "test-package: SKIPPED: $*"; exit 0; }
fail() { echo "test-package: FAILED: $*" >&2; exit 1; }
say() { echo "test-package: $*" >&2; }
start=$SECONDS
deb=""
if [[ "${1:-}" == "--deb" ]]; then deb=$(readlink -f "$2"); fi
[ "$(id -u)" -eq 0 ] || skip "debootstrap and chroot need root"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (scripts/setup.sh --tests installs it)"

mirror=http://deb.debian.org/debian
cache=/var/cache/keychainfs-tests
tarball=$cache/bookworm-minbase-$(date +%Y%m%d).tar
work=$(mktemp -d /var/tmp/keychainfs-package-test.XXXXXX)
root=$work/root
cleanup() {
    # A daemon this test started in the root and left behind (a step failed): ended by its pid.
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill "${p#/proc/}" 2>/dev/null
    done
    # Mounts inside the root (the walkthrough's, demo.sh's), then the bound /dev/fuse and /proc.
    awk -v r="$root/" 'index($5, r) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
    rm -rf "$work"
}
trap cleanup EXIT

if [ ! -f "$tarball" ]; then
    say "making a bookworm root with debootstrap --variant=minbase (once a day; a few minutes)"
    if ! debootstrap --variant=minbase bookworm "$work/bootstrap" "$mirror" > "$work/debootstrap.log" 2>&1; then
        tail -5 "$work/debootstrap.log" >&2
        skip "debootstrap could not make a bookworm root from $mirror (no route to the archive?)"
    fi
    mkdir -p "$cache"
    rm -f "$cache"/bookworm-minbase-*.tar
    tar -C "$work/bootstrap" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$work/bootstrap"
fi
mkdir "$root"
tar -C "$root" -xf "$tarball"
[ ! -e "$root/opt/swift" ] || fail "the fresh root has /opt/swift"

if [ -z "$deb" ]; then
    deb=$(scripts/package.sh --output "$work") || fail "scripts/package.sh failed"
fi
say "package $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB; built or given after $((SECONDS - start)) s"

# The archive as the host reaches it; updates and security as a Debian 12 machine has them.
cp /etc/resolv.conf "$root/etc/resolv.conf"
cat > "$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
mount -t proc proc "$root/proc"
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
in_root sh -c 'apt-get update -qq && apt-get install -y -qq "/tmp/$1" > /tmp/apt-install.log 2>&1 || { tail -20 /tmp/apt-install.log; exit 1; }' \
    sh "$(basename "$deb")" || fail "apt-get install ./$(basename "$deb") failed in a fresh bookworm root"
rm -f "$root/tmp/$(basename "$deb")" "$root/tmp/apt-install.log"
say "installed with apt-get after $((SECONDS - start)) s"

in_root sh -c '! command -v swift && [ ! -e /opt/swift ]' >/dev/null || fail "the root has a Swift toolchain"
in_root keychainfs help | grep -q '^Commands:' || fail "keychainfs help"
version=$(in_root keychainfs-daemon --version) || fail "keychainfs-daemon --version"
[[ "$version" == "keychainfs "* ]] || fail "keychainfs-daemon --version printed: $version"
say "keychainfs-daemon --version: $version"
for page in man1/keychainfs.1.gz man8/keychainfs-daemon.8.gz man8/mount.fuse.keychainfs.8.gz \
            man1/git-credential-keychainfs.1.gz man1/docker-credential-keychainfs.1.gz; do
    [ -s "$root/usr/share/man/$page" ] || fail "no /usr/share/man/$page"
done
[ "$(readlink -f "$root/usr/sbin/mount.fuse.keychainfs")" = "$root/usr/bin/keychainfs" ] || fail "mount.fuse.keychainfs"

# The first steps of the README's walkthrough with the installed binaries.
walk='set -e
export KEYCHAINFS_VAULT=/root/walk/app.vault KEYCHAINFS_RUNTIME_DIR=/root/walk/run KEYCHAINFS_DEVICE_KEY=/root/walk/device.key
mkdir -p /root/walk && chmod 700 /root/walk
echo "walk pass phrase" | keychainfs create-keychain --kdf interactive
keychainfs add-generic-password -s db -a app -w - <<EOF
s3cret
EOF
test "$(keychainfs find-generic-password -s db -a app -w)" = s3cret
keychainfs lock-keychain
status=0; keychainfs find-generic-password -s db -a app -w 2>/dev/null || status=$?
test "$status" = 36
echo "walk pass phrase" | keychainfs unlock-keychain
test "$(keychainfs find-generic-password -s db -a app -w)" = s3cret
if [ -c /dev/fuse ]; then
    mkdir -p /mnt/keychain
    keychainfs mount /mnt/keychain
    test "$(cat /mnt/keychain/db/app)" = s3cret
    keychainfs unmount /mnt/keychain
    mount -t fuse.keychainfs -o ro /root/walk/app.vault /mnt/keychain    # mount(8) runs mount.fuse.keychainfs
    test "$(cat /mnt/keychain/db/app)" = s3cret
    keychainfs unmount /mnt/keychain
    echo mounted
fi
keychainfs stop
rm -rf /root/walk'
if [ -c /dev/fuse ]; then
    touch "$root/dev/fuse" 2>/dev/null || true
    mount --bind /dev/fuse "$root/dev/fuse"
fi
walked=$(in_root bash -c "$walk" 2>&1) || { echo "$walked" >&2; fail "the walkthrough with the installed binaries"; }
[[ "$walked" == *mounted* ]] && say "walkthrough: create, add, find, lock (exit 36), unlock, mount and cat, mount -t fuse.keychainfs: passed" \
    || say "walkthrough: create, add, find, lock (exit 36), unlock: passed (no /dev/fuse: not mounted)"
# The README's first command, scripts/demo.sh, on the installed binaries: no toolchain, no build.
if [ -c /dev/fuse ]; then
    install -D -m 0755 scripts/demo.sh "$root/root/checkout/scripts/demo.sh"
    demo=$(in_root bash /root/checkout/scripts/demo.sh 2>&1) || { echo "$demo" >&2; fail "scripts/demo.sh with the package installed"; }
    [[ "$demo" == *"Using the installed package"* && "$demo" != *Building* && "$demo" == *"none found"* ]] \
        || { echo "$demo" >&2; fail "scripts/demo.sh did not run on the installed package"; }
    rm -rf "$root/root/checkout"
    say "scripts/demo.sh ran on the installed binaries"
fi
if mountpoint -q "$root/dev/fuse"; then umount "$root/dev/fuse"; fi

# Purge: none of the package's files remain, nor any file named after keychainfs.
mapfile -t files < <(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|')
in_root apt-get purge -y -qq keychainfs > "$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "apt-get purge keychainfs"; }
left=()
for f in "${files[@]}"; do
    if [ -e "$root$f" ] || [ -L "$root$f" ]; then left+=("$f"); fi
done
mapfile -t named < <(cd "$root" && find . -xdev -path ./proc -prune -o -name '*keychainfs*' -print)
((${#left[@]} == 0)) || fail "apt-get purge left: ${left[*]}"
((${#named[@]} == 0)) || fail "after apt-get purge these remain: ${named[*]}"
say "apt-get purge keychainfs left none of its ${#files[@]} files"
echo "test-package: passed in $((SECONDS - start)) s"
