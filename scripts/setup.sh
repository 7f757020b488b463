#!/usr/bin/env bash
# Installs the C libraries and tools keychainfs builds against (Debian 12 packages).
set -euo pipefail
# libpq-dev: fleet sync is a libpq client (KeychainSync); postgresql: a real libpq reads a passfile from a mount (MountPasswordFileTests); systemd: systemd-analyze
# verifies the units; libssl-dev: SecKey's crypto (KeychainKeys); openssl, python3-cryptography: the
# independent implementations the key tests check against; libsystemd-dev: sd-bus for the Secret
# Service (CSystemd); dbus-daemon, dbus-bin (dbus-send): the private session bus of SecretServiceTests;
# nginx-light: a real TLS server reads its certificate and key from the mount (MountNginxTests), with
# curl as its client; libtss2-dev: the TPM 2.0 stack that seals the device key (CTSS2), swtpm: the
# software TPM the TPM tests run, tpm2-tools: tpm2_pcrextend, the tests' firmware update;
# openssh-client, openssh-server: ssh, ssh-add, ssh-keygen and an sshd on 127.0.0.1 against the SSH agent (KeychainAgentTests)
packages=(fuse3 libfuse3-dev libpq-dev libsodium-dev libsqlite3-dev libssl-dev openssl pkg-config attr python3 python3-cryptography
          postgresql systemd libsystemd-dev dbus-daemon dbus-bin nginx-light curl
          libtss2-dev swtpm swtpm-tools tpm2-tools openssh-client openssh-server)
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
missing_from() {
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}
mapfile -t missing < <(missing_from "${packages[@]}")
mapfile -t missing_clients < <(missing_from "${clients[@]}")
if ((${#missing[@]} + ${#missing_clients[@]})); then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    if ((${#missing[@]})); then
        DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
    fi
    if ((${#missing_clients[@]})); then
        DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_clients[@]}"
    fi
fi
# Debian's docker-credential-secretservice, for CredentialHelperTests: unpacked from its package,
# not installed, since golang-docker-credential-helpers depends on gnome-keyring (a second Secret
# Service, and its PAM module).
docker_helper=/usr/local/libexec/keychainfs-tests/docker-credential-secretservice
if [ ! -x "$docker_helper" ]; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    unpack=$(mktemp -d)
    (cd "$unpack" && apt-get download -qq golang-docker-credential-helpers && dpkg-deb -x golang-docker-credential-helpers_*.deb root)
    "${sudo_cmd[@]}" install -D -m 0755 "$unpack/root/usr/bin/docker-credential-secretservice" "$docker_helper"
    rm -rf "$unpack"
fi
# SecretStorageSuiteTests: the test suite of SecretStorage's source distribution (it ships tests/),
# the release Debian's python3-secretstorage packages, fetched once from PyPI.
secretstorage_version=$(dpkg-query -W -f='${Version}' python3-secretstorage 2>/dev/null | sed 's/-[^-]*$//' || true)
secretstorage_sdist=/usr/local/share/keychainfs-tests/secretstorage/SecretStorage-$secretstorage_version.tar.gz
if [ -n "$secretstorage_version" ] && [ ! -f "$secretstorage_sdist" ]; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    fetch=$(mktemp -d)
    if /usr/bin/python3 -m pip download -q --no-binary :all: --no-deps -d "$fetch" "secretstorage==$secretstorage_version"; then
        "${sudo_cmd[@]}" install -D -m 0644 "$fetch/SecretStorage-$secretstorage_version.tar.gz" "$secretstorage_sdist"
    else
        echo "could not fetch SecretStorage $secretstorage_version from PyPI: SecretStorageSuiteTests will skip" >&2
    fi
    rm -rf "$fetch"
fi
# Debian's fuse3 udev rule makes /dev/fuse 0666, so users who are not root can mount through
# fusermount3; a container without udev may leave it 0600 (MountNamespaceTests needs the rule's mode).
if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" chmod 0666 /dev/fuse
fi
export PATH="/opt/swift/usr/bin:$PATH"
command -v swift >/dev/null || { echo "swift not found (expected under /opt/swift)" >&2; exit 1; }
