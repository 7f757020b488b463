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
# Usage: mount-helpers/install.sh [--prefix DIR]   (DIR defaults to /, for staging a package)
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/
if [[ "${1:-}" == "--prefix" ]]; then prefix="$2"; fi
export PATH="/opt/swift/usr/bin:$PATH"
swift build -c release --product keychainfs
swift build -c release --product keychainfs-daemon
swift build -c release --product git-credential-keychainfs
swift build -c release --product docker-credential-keychainfs
bin=$(swift build -c release --show-bin-path)
install -D -m 0755 "$bin/keychainfs" "$prefix/usr/local/bin/keychainfs"
install -D -m 0755 "$bin/keychainfs-daemon" "$prefix/usr/local/bin/keychainfs-daemon"
install -D -m 0755 "$bin/git-credential-keychainfs" "$prefix/usr/local/bin/git-credential-keychainfs"
install -D -m 0755 "$bin/docker-credential-keychainfs" "$prefix/usr/local/bin/docker-credential-keychainfs"
mkdir -p "$prefix/usr/sbin"
ln -sf /usr/local/bin/keychainfs "$prefix/usr/sbin/mount.fuse.keychainfs"
install -D -m 0644 mount-helpers/systemd/keychainfs@.service "$prefix/etc/systemd/system/keychainfs@.service"
install -D -m 0644 mount-helpers/systemd/keychainfs-ssh-agent.socket "$prefix/etc/systemd/user/keychainfs-ssh-agent.socket"
install -D -m 0644 mount-helpers/systemd/keychainfs-ssh-agent.service "$prefix/etc/systemd/user/keychainfs-ssh-agent.service"
install -D -m 0644 mount-helpers/systemd/run-keychain.mount "$prefix/usr/local/share/keychainfs/run-keychain.mount"
install -D -m 0644 mount-helpers/dbus/org.freedesktop.secrets.service \
    "$prefix/usr/local/share/dbus-1/services/org.freedesktop.secrets.service"
install -D -m 0755 mount-helpers/pam-unlock "$prefix/usr/local/lib/keychainfs/pam-unlock"
echo "installed keychainfs under $prefix"
