#!/usr/bin/env bash
# Installs the Debian 12 packages keychainfs needs.
#   scripts/setup.sh           what building and running need: the C libraries keychainfs links
#                              (their -dev packages bring the runtime libraries), pkg-config,
#                              fuse3 (fusermount3 and /dev/fuse's mode), and dpkg-dev for
#                              scripts/package.sh
#   scripts/setup.sh --tests   also what the tests add: the real servers and clients they drive
#                              (PostgreSQL, nginx, sshd, swtpm, D-Bus, git, gcc, ...), lintian and
#                              debootstrap for scripts/test-package.sh, man-db to render the pages
# As root it runs apt-get itself; otherwise through sudo when there is one.
set -euo pipefail
tests=0
case "${1:-}" in
    --tests) tests=1 ;;
    "") ;;
    *) echo "usage: scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac
# Runs a command as root: itself when root, else through sudo, asked only when something is missing.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "setup.sh: $1 needs root: run scripts/setup.sh as root (there is no sudo here)" >&2
        exit 1
    fi
}
# The libraries keychainfs links: libfuse3 (the mount), libsodium (the vault's cryptography),
# SQLite (the vault file), libssl (SecKey's crypto, KeychainKeys), libpq (fleet sync, KeychainSync),
# libsystemd (sd-bus for the Secret Service, CSystemd), libtss2 (the TPM that seals the device key,
# CTSS2); attr: getfattr, which scripts/demo.sh shows. binutils, libc6-dev, libgcc-12-dev,
# libstdc++-12-dev: what the Swift toolchain's linker links with (the static Swift runtime is C++).
packages=(fuse3 libfuse3-dev libpq-dev libsodium-dev libsqlite3-dev libssl-dev libsystemd-dev libtss2-dev pkg-config attr dpkg-dev
          binutils libc6-dev libgcc-12-dev libstdc++-12-dev)
clients=()
if ((tests)); then
    # openssl, python3-cryptography: the independent implementations the key tests check against;
    # postgresql: a real libpq reads a passfile from a mount (MountPasswordFileTests), and the fleet
    # sync server; systemd: systemd-analyze verifies the units; dbus-daemon, dbus-bin (dbus-send): the
    # private session bus of SecretServiceTests; nginx-light: a real TLS server reads its certificate
    # and key from the mount (MountNginxTests), with curl as its client; swtpm: the software TPM the
    # TPM tests run, tpm2-tools: tpm2_pcrextend, the tests' firmware update; openssh-client,
    # openssh-server: ssh, ssh-add, ssh-keygen and an sshd on 127.0.0.1 against the SSH agent
    # (KeychainAgentTests); lintian, debootstrap: scripts/test-package.sh; man-db, groff-base: man -l
    # renders the pages (ManPageTests); pgbouncer: hosts that poll through a pooler in transaction
    # mode (SyncPollTests, bench/sync.sh --fleet).
    packages+=(openssl python3 python3-cryptography postgresql systemd dbus-daemon dbus-bin nginx-light curl
               swtpm swtpm-tools tpm2-tools openssh-client openssh-server lintian debootstrap man-db groff-base pgbouncer)
    # The real Secret Service clients SecretServiceTests drive: secret-tool (libsecret), Python's
    # secretstorage and keyring. Installed without recommends: they would bring gnome-keyring, a second
    # Secret Service, and its PAM module.
    clients=(libsecret-tools python3-secretstorage python3-keyring)
    # CredentialHelperTests: git (clone over HTTP through git http-backend), gcc with libsecret-1-dev
    # and libglib2.0-dev to build git's own git-credential-libsecret from /usr/share/doc/git/contrib.
    clients+=(git gcc libsecret-1-dev libglib2.0-dev)
    # SecretStorageSuiteTests: pip, to fetch SecretStorage's source distribution (below).
    clients+=(python3-pip)
    # CLIPinentryTests: Debian's pinentry-tty, typed into in a tmux pane. CLIPodmanSecretTests: podman
    # (rootful, --runtime runc) with runc, for podman's shell secret driver.
    clients+=(pinentry-tty tmux podman runc)
fi
missing_from() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}
mapfile -t missing < <(missing_from "${packages[@]}")
mapfile -t missing_clients < <(((${#clients[@]})) && missing_from "${clients[@]}")
if ((${#missing[@]} + ${#missing_clients[@]})); then
    as_root apt-get update -qq
    if ((${#missing[@]})); then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
    fi
    if ((${#missing_clients[@]})); then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing_clients[@]}"
    fi
fi
if ((tests)); then
    # Debian's docker-credential-secretservice, for CredentialHelperTests: unpacked from its package,
    # not installed, since golang-docker-credential-helpers depends on gnome-keyring (a second Secret
    # Service, and its PAM module).
    docker_helper=/usr/local/libexec/keychainfs-tests/docker-credential-secretservice
    if [ ! -x "$docker_helper" ]; then
        unpack=$(mktemp -d)
        (cd "$unpack" && apt-get download -qq golang-docker-credential-helpers && dpkg-deb -x golang-docker-credential-helpers_*.deb root)
        as_root install -D -m 0755 "$unpack/root/usr/bin/docker-credential-secretservice" "$docker_helper"
        rm -rf "$unpack"
    fi
    # SecretStorageSuiteTests: the test suite of SecretStorage's source distribution (it ships tests/),
    # the release Debian's python3-secretstorage packages, fetched once from PyPI.
    secretstorage_version=$(dpkg-query -W -f='${Version}' python3-secretstorage 2>/dev/null | sed 's/-[^-]*$//' || true)
    secretstorage_sdist=/usr/local/share/keychainfs-tests/secretstorage/SecretStorage-$secretstorage_version.tar.gz
    if [ -n "$secretstorage_version" ] && [ ! -f "$secretstorage_sdist" ]; then
        fetch=$(mktemp -d)
        if /usr/bin/python3 -m pip download -q --no-binary :all: --no-deps -d "$fetch" "secretstorage==$secretstorage_version"; then
            as_root install -D -m 0644 "$fetch/SecretStorage-$secretstorage_version.tar.gz" "$secretstorage_sdist"
        else
            echo "could not fetch SecretStorage $secretstorage_version from PyPI: SecretStorageSuiteTests will skip" >&2
        fi
        rm -rf "$fetch"
    fi
    # Debian's fuse3 udev rule makes /dev/fuse 0666, so users who are not root can mount through
    # fusermount3; a container without udev may leave it 0600 (MountNamespaceTests needs the rule's mode).
    if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
        as_root chmod 0666 /dev/fuse
    fi
fi
export PATH="/opt/swift/usr/bin:$PATH"
command -v swift >/dev/null || { echo "swift not found (expected under /opt/swift)" >&2; exit 1; }
