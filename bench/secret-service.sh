#!/usr/bin/env bash
# The Secret Service benchmark (issue 18): keychainfs against gnome-keyring in one run, and
# how fast the provider learns of changes made outside D-Bus.
#
#   bench/secret-service.sh [--items N] [--adds N] [--seconds S] [--install-gnome-keyring]
#                           [--no-gnome-keyring] [--no-adds] [--no-build]
#
# 1. Outside adds (--adds N, default 1000; --no-adds skips): a fresh vault, `keychainfs
#    secret-service` on a `dbus-run-session` bus and a client that has called it and listens;
#    N generic passwords added through the CLI, one process each. Measured: the seconds until the
#    listener has all N ItemCreated signals, and the provider's CPU seconds, once with
#    KEYCHAINFS_SECRET_SERVICE_RESCAN=1 (every change compares the whole vault: the provider
#    before changes were looked up by name) and once without; the ratios.
# 2. Lookups (--items N, default 1000): keychainfs and gnome-keyring, each under its own
#    `dbus-run-session` with the same N items plus service=bench account=secret, filled over
#    D-Bus (secretstorage): `secret-tool lookup service bench account secret` per invocation
#    (median of 100) and libsecret lookups per second for S seconds (default 5) from one
#    connection (bench/secretlookup.c, secret_password_lookup_sync); both sides and the ratios.
#    gnome-keyring runs as `gnome-keyring-daemon --foreground --unlock --components=secrets`
#    with a new login keyring in a scratch HOME and XDG directories. When it is not installed,
#    --install-gnome-keyring installs it (apt-get install --no-install-recommends
#    gnome-keyring); otherwise that side is skipped (as with --no-gnome-keyring).
# Binaries: built in release (`swift build -c release`) into KEYCHAINFS_BENCH_SCRATCH (default
# /tmp/perf-build, as bench/run.sh), or taken from there with --no-build. Needs Debian's python3 (/usr/bin/python3) with
# jeepney and secretstorage, libsecret-tools, libsecret-1-dev and gcc (scripts/setup.sh), and
# dbus-run-session. Everything it starts is stopped and its directory removed on exit. It prints
# the results; it writes no file of the repository.
set -euo pipefail

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

items=1000; adds=1000; seconds=5; install_gk=0; with_gk=1; with_adds=1; build=1
while (($#)); do
    case "$1" in
        --items) shift; items=${1:?--items needs a number} ;;
        --adds) shift; adds=${1:?--adds needs a number} ;;
        --seconds) shift; seconds=${1:?--seconds needs a number} ;;
        --install-gnome-keyring) install_gk=1 ;;
        --no-gnome-keyring) with_gk=0 ;;
        --no-adds) with_adds=0 ;;
        --no-build) build=0 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/secret-service.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
for n in "$items" "$adds"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench/secret-service.sh: --items and --adds take a positive number" >&2; exit 2; }
done

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
export PATH="/opt/swift/usr/bin:$PATH"
scratch=${KEYCHAINFS_BENCH_SCRATCH:-/tmp/perf-build}
log() { echo "== $*" >&2; }
die() { echo "bench/secret-service.sh: $*" >&2; exit 1; }

# Debian's python3, with its jeepney and secretstorage (not another python3 first on PATH).
py=/usr/bin/python3
for tool in dbus-run-session secret-tool gcc pkg-config "$py"; do
    command -v "$tool" >/dev/null || die "$tool is not installed (scripts/setup.sh installs it)"
done
"$py" -c 'import jeepney, secretstorage' 2>/dev/null || die "python3-jeepney and python3-secretstorage are needed"
pkg-config --exists libsecret-1 || die "libsecret-1-dev is needed"

work=$(mktemp -d /tmp/kcfs-ss-bench.XXXXXX)
vaults=()
cleanup() {
    trap - EXIT INT TERM
    for v in "${vaults[@]}"; do
        KEYCHAINFS_VAULT="$v/vault" KEYCHAINFS_RUNTIME_DIR="$v/run" KEYCHAINFS_DEVICE_KEY="$v/device.key" \
            timeout 10 "$kc" stop >/dev/null 2>&1 || true
    done
    # A gnome-keyring-daemon of this run's HOME that outlived its bus.
    if [ -d "$work/gk" ]; then
        for e in /proc/[0-9]*; do
            if { tr '\0' '\n' < "$e/environ"; } 2>/dev/null | grep -qx "HOME=$work/gk/home"; then kill "${e#/proc/}" 2>/dev/null || true; fi
        done
    fi
    rm -rf "$work"
}
kc=""
trap cleanup EXIT
trap 'echo "bench/secret-service.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

if ((build)); then
    log "building keychainfs and keychainfs-daemon (release, scratch path $scratch)"
    (cd "$src" && swift build -c release --scratch-path "$scratch" --product keychainfs >"$work/build.log" 2>&1 &&
                   swift build -c release --scratch-path "$scratch" --product keychainfs-daemon >>"$work/build.log" 2>&1) ||
        { tail -30 "$work/build.log" >&2; die "swift build failed"; }
fi
kc="$scratch/release/keychainfs"
[ -x "$kc" ] && [ -x "$scratch/release/keychainfs-daemon" ] || die "no keychainfs or keychainfs-daemon in $scratch/release"
lookup="$work/secretlookup"
gcc -O2 -Wall -Wextra -o "$lookup" "$here/secretlookup.c" $(pkg-config --cflags --libs libsecret-1) || die "gcc secretlookup.c failed"

if ((with_gk)) && ! command -v gnome-keyring-daemon >/dev/null; then
    if ((install_gk)); then
        log "installing gnome-keyring (apt-get install --no-install-recommends gnome-keyring)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnome-keyring >"$work/apt.log" 2>&1 ||
            { tail -20 "$work/apt.log" >&2; die "apt-get install gnome-keyring failed"; }
    else
        log "gnome-keyring is not installed: its side is skipped (--install-gnome-keyring installs it)"
        with_gk=0
    fi
fi

# make_vault NAME: a fresh vault in its own directory (in this shell, so cleanup stops its daemon);
# vault_env NAME: its environment, for `env`.
make_vault() {
    local d="$work/kc$1"
    mkdir -p "$d/run" && chmod 700 "$d/run"
    vaults+=("$d")
    echo "bench pass phrase" | env $(vault_env "$1") "$kc" create-keychain --kdf interactive >/dev/null
}
vault_env() { echo "KEYCHAINFS_VAULT=$work/kc$1/vault KEYCHAINFS_RUNTIME_DIR=$work/kc$1/run KEYCHAINFS_DEVICE_KEY=$work/kc$1/device.key"; }
# get FILE KEY: a key=value line of a phase's output.
get() { sed -n "s/^$2=//p" "$1"; }
ratio() { "$py" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{a / b:.2f}' if b else '-')" "$1" "$2"; }

log "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

if ((with_adds)); then
    for mode in rescan incremental; do
        log "outside adds: $adds through the CLI, provider $mode"
        flag=""; [ "$mode" = rescan ] && flag="--rescan"
        make_vault "$mode"
        # shellcheck disable=SC2046
        env $(vault_env "$mode") dbus-run-session -- "$py" "$here/secret-service.py" adds "$kc" "$adds" $flag > "$work/adds-$mode" ||
            die "the $mode phase failed"
    done
fi

log "lookups: keychainfs, $items items"
make_vault lookups
# shellcheck disable=SC2046
env $(vault_env lookups) dbus-run-session -- "$py" "$here/secret-service.py" lookups keychainfs "$kc" "$items" "$seconds" "$lookup" \
    > "$work/lookups-keychainfs" || die "the keychainfs lookups failed"
if ((with_gk)); then
    log "lookups: gnome-keyring $(dpkg-query -W -f '${Version}' gnome-keyring 2>/dev/null || echo '?'), $items items"
    gk="$work/gk"
    mkdir -p "$gk/home" "$gk/data" "$gk/config" "$gk/cache" "$gk/run" && chmod 700 "$gk/run"
    env -u GNOME_KEYRING_CONTROL HOME="$gk/home" XDG_DATA_HOME="$gk/data" XDG_CONFIG_HOME="$gk/config" XDG_CACHE_HOME="$gk/cache" \
        XDG_RUNTIME_DIR="$gk/run" dbus-run-session -- "$py" "$here/secret-service.py" lookups gnome-keyring - "$items" "$seconds" "$lookup" \
        > "$work/lookups-gnome-keyring" || die "the gnome-keyring lookups failed"
fi
log "machine: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"

echo
if ((with_adds)); then
    r="$work/adds-rescan" i="$work/adds-incremental"
    echo "Outside adds: $adds generic passwords through the CLI, one process each"
    printf '  %-44s %12s %12s %8s\n' "" "rescan" "by name" "ratio"
    printf '  %-44s %12s %12s %8s\n' "seconds until every ItemCreated arrived" "$(get "$r" learnt_s)" "$(get "$i" learnt_s)" \
        "$(ratio "$(get "$r" learnt_s)" "$(get "$i" learnt_s)")"
    printf '  %-44s %12s %12s %8s\n' "seconds after the last add" "$(get "$r" after_last_add_s)" "$(get "$i" after_last_add_s)" \
        "$(ratio "$(get "$r" after_last_add_s)" "$(get "$i" after_last_add_s)")"
    printf '  %-44s %12s %12s %8s\n' "provider CPU seconds" "$(get "$r" provider_cpu_s)" "$(get "$i" provider_cpu_s)" \
        "$(ratio "$(get "$r" provider_cpu_s)" "$(get "$i" provider_cpu_s)")"
    printf '  %-44s %12s %12s\n' "seconds the adds took" "$(get "$r" adds_s)" "$(get "$i" adds_s)"
    echo
fi
k="$work/lookups-keychainfs" g="$work/lookups-gnome-keyring"
echo "Lookups: $items items plus the one looked up"
if ((with_gk)); then
    printf '  %-44s %12s %14s %8s\n' "" "keychainfs" "gnome-keyring" "ratio"
    printf '  %-44s %12s %14s %8s\n' "secret-tool lookup, median ms per invocation" "$(get "$k" secret_tool_median_ms)" \
        "$(get "$g" secret_tool_median_ms)" "$(ratio "$(get "$g" secret_tool_median_ms)" "$(get "$k" secret_tool_median_ms)")"
    printf '  %-44s %12s %14s %8s\n' "secret-tool lookup, mean ms" "$(get "$k" secret_tool_mean_ms)" "$(get "$g" secret_tool_mean_ms)" \
        "$(ratio "$(get "$g" secret_tool_mean_ms)" "$(get "$k" secret_tool_mean_ms)")"
    printf '  %-44s %12s %14s %8s\n' "libsecret lookups per second (1 connection)" "$(get "$k" libsecret_rate)" "$(get "$g" libsecret_rate)" \
        "$(ratio "$(get "$k" libsecret_rate)" "$(get "$g" libsecret_rate)")"
    printf '  %-44s %12s %14s\n' "fill over D-Bus, seconds" "$(get "$k" fill_s)" "$(get "$g" fill_s)"
    printf '  %-44s %12s %14s\n' "items listed" "$(get "$k" items)" "$(get "$g" items)"
    echo "  (ratio: how many times keychainfs is ahead; above 1 is faster)"
else
    printf '  %-44s %12s\n' "secret-tool lookup, median ms per invocation" "$(get "$k" secret_tool_median_ms)"
    printf '  %-44s %12s\n' "libsecret lookups per second (1 connection)" "$(get "$k" libsecret_rate)"
    printf '  %-44s %12s\n' "fill over D-Bus, seconds" "$(get "$k" fill_s)"
fi
