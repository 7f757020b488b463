#!/usr/bin/env bash
# Installs keychainfs where mount(8), systemd and PAM find it:
#   /usr/local/bin/keychainfs                 the command (release build), a client of the daemon
#   /usr/local/bin/keychainfs-daemon          the daemon, and the verbs that need the engine in-process
#                                             (`keychainfs` runs the one beside itself)
#   /usr/local/bin/git-credential-keychainfs, docker-credential-keychainfs
#                                             git's and docker's credential helpers (docs/credential-helpers.md)
#   /usr/sbin/mount.fuse.keychainfs           so `mount -t fuse.keychainfs` and fstab lines work
#   /etc/systemd/system/keychainfs@.service   the daemon per vault
#   /etc/systemd/user/keychainfs-ssh-agent.{socket,service}
#                                             the SSH agent per user, started by its socket
#   /usr/local/lib/keychainfs/pam-unlock      the pam_exec hook that unlocks at login
#   /usr/local/share/dbus-1/services/org.freedesktop.secrets.service
#                                             so the session bus starts `keychainfs secret-service`
#   /usr/local/share/man/man1, man8           the manual pages (`keychainfs help --man PAGE`)
#   /usr/local/share/bash-completion/completions/keychainfs
# Usage: mount-helpers/install.sh [--prefix DIR]   (DIR defaults to /; scripts/package.sh makes a
# Debian package instead, with everything under /usr). It builds as the user who runs it and
# installs as root: run it as root, or as a user with sudo (it asks sudo for the install alone).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/
if [[ "${1:-}" == "--prefix" ]]; then prefix="$2"; fi
as_root=()
if [ "$(id -u)" -ne 0 ] && [ ! -w "$prefix" ]; then
    command -v sudo >/dev/null || { echo "install.sh writes under $prefix: run it as root (there is no sudo here)" >&2; exit 1; }
    as_root=(sudo)
fi
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product keychainfs
swift build -c release --product keychainfs-daemon
swift build -c release --product git-credential-keychainfs
swift build -c release --product docker-credential-keychainfs
bin=$(swift build -c release --show-bin-path)
"${as_root[@]}" install -D -m 0755 "$bin/keychainfs" "$prefix/usr/local/bin/keychainfs"
"${as_root[@]}" install -D -m 0755 "$bin/keychainfs-daemon" "$prefix/usr/local/bin/keychainfs-daemon"
"${as_root[@]}" install -D -m 0755 "$bin/git-credential-keychainfs" "$prefix/usr/local/bin/git-credential-keychainfs"
"${as_root[@]}" install -D -m 0755 "$bin/docker-credential-keychainfs" "$prefix/usr/local/bin/docker-credential-keychainfs"
"${as_root[@]}" mkdir -p "$prefix/usr/sbin"
"${as_root[@]}" ln -sf /usr/local/bin/keychainfs "$prefix/usr/sbin/mount.fuse.keychainfs"
"${as_root[@]}" install -D -m 0644 mount-helpers/systemd/keychainfs@.service "$prefix/etc/systemd/system/keychainfs@.service"
"${as_root[@]}" install -D -m 0644 mount-helpers/systemd/keychainfs-ssh-agent.socket "$prefix/etc/systemd/user/keychainfs-ssh-agent.socket"
"${as_root[@]}" install -D -m 0644 mount-helpers/systemd/keychainfs-ssh-agent.service "$prefix/etc/systemd/user/keychainfs-ssh-agent.service"
"${as_root[@]}" install -D -m 0644 mount-helpers/systemd/run-keychain.mount "$prefix/usr/local/share/keychainfs/run-keychain.mount"
"${as_root[@]}" install -D -m 0644 mount-helpers/dbus/org.freedesktop.secrets.service \
    "$prefix/usr/local/share/dbus-1/services/org.freedesktop.secrets.service"
"${as_root[@]}" install -D -m 0755 mount-helpers/pam-unlock "$prefix/usr/local/lib/keychainfs/pam-unlock"
manpages=$(mktemp -d)
trap 'rm -rf "$manpages"' EXIT
for page in keychainfs:1 keychainfs-daemon:8 mount.fuse.keychainfs:8 git-credential-keychainfs:1 docker-credential-keychainfs:1; do
    "$bin/keychainfs" help --man "${page%:*}" > "$manpages/${page%:*}.${page#*:}"
    "${as_root[@]}" install -D -m 0644 "$manpages/${page%:*}.${page#*:}" "$prefix/usr/local/share/man/man${page#*:}/${page%:*}.${page#*:}"
done
"${as_root[@]}" install -D -m 0644 mount-helpers/bash-completion/keychainfs "$prefix/usr/local/share/bash-completion/completions/keychainfs"
echo "installed keychainfs under $prefix"
