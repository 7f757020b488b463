#!/usr/bin/env bash
# The SSH agent benchmark (issue 29, "Benchmark"; docs/ssh-agent.md): `keychainfs ssh-agent`
# against OpenSSH's own `ssh-agent` holding the same software keys, in one run:
#   - signatures per second: bench/agentclient.py (Debian's python3, standard library only,
#     the agent protocol spoken directly) signs a fresh 32-byte random payload per request, one
#     request at a time on a connection of its own per client process, for --seconds S (default
#     3) from 1 and from 4 clients; an Ed25519 key and an ECDSA P-256 key (ssh-keygen -t ed25519,
#     -t ecdsa -b 256 -m PEM), added to both agents with `ssh-add FILE` (keychainfs stores them in
#     the vault); the two agents' runs interleaved (keychainfs, OpenSSH, ...) --rounds R times
#     (default 3); medians, the ratio keychainfs/OpenSSH (target: 0.67 or more, within 1.5x),
#     errors (any reply but SSH_AGENT_SIGN_RESPONSE), and the CPU each agent (and keychainfs's
#     daemon) spent per signature over those runs;
#   - `ssh ... true` to an sshd of its own on 127.0.0.1 (a random port, its own host key and
#     authorized keys), through each agent with each key (IdentitiesOnly, IdentityFile the
#     public key, the private key moved away once added), and with the key file and no agent
#     (the floor), timed by `hyperfine -N -w 3 -r N` (--runs, default 30); medians and the
#     ratio of keychainfs's time to OpenSSH's.
# With /usr/bin/swtpm (Debian's swtpm), a TPM key too: a software TPM (`swtpm socket --tpm2` on
# free ports of 127.0.0.1, its state in the run's directory) that the daemon reaches through
# KEYCHAINFS_TCTI, and a P-256 key made in it by `keychainfs generate-key -t ecdsa --tpm --ssh`;
# its signatures per second (1 and 4 clients, R rounds) and logins are measured the same way
# through keychainfs's agent only (OpenSSH's agent has no TPM key: "-"), printed beside
# keychainfs's software P-256 figures, with the CPU swtpm spent per signature. Without swtpm the
# results say why TPM keys are not measured. The machine's load average is printed at the start
# and the end.
#
#   bench/ssh-agent.sh --bin DIR [--seconds S] [--rounds R] [--runs N] [--keep]
# DIR holds keychainfs and keychainfs-daemon (built, e.g. `swift build -c release`); nothing is
# built here. bench/run.sh --ssh-agent-only builds them and runs this. Needs root (sshd), Debian's
# openssh-client and openssh-server, hyperfine and /usr/bin/python3 (and swtpm for the TPM key).
# Everything it starts (swtpm too) is stopped and its directory (swtpm's state too) removed on
# exit, also when interrupted or failing; two runs at once do not collide. It prints the results;
# it writes no file of the repository. Exits 1 when a signature or a login failed (after printing
# the figures).
set -euo pipefail

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
bindir=""; seconds=3; rounds=3; runs=30; keep=0
while (($#)); do
    case "$1" in
        --bin) shift; bindir=${1:?--bin needs a directory} ;;
        --seconds) shift; seconds=${1:?--seconds needs a number} ;;
        --rounds) shift; rounds=${1:?--rounds needs a number} ;;
        --runs) shift; runs=${1:?--runs needs a number} ;;
        --keep) keep=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/ssh-agent.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ "$seconds" =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v s="$seconds" 'BEGIN { exit !(s > 0) }' ||
    { echo "bench/ssh-agent.sh: --seconds takes a positive number" >&2; exit 2; }
for n in "$rounds" "$runs"; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench/ssh-agent.sh: --rounds and --runs take positive numbers" >&2; exit 2; }
done
[ -n "$bindir" ] && [ -x "$bindir/keychainfs" ] && [ -x "$bindir/keychainfs-daemon" ] ||
    { echo "bench/ssh-agent.sh: --bin names a directory with keychainfs and keychainfs-daemon" >&2; exit 2; }
bindir=$(cd "$bindir" && pwd)
kc="$bindir/keychainfs"
[ "$(id -u)" -eq 0 ] || { echo "bench/ssh-agent.sh: run as root (it starts sshd)" >&2; exit 1; }
for t in /usr/bin/ssh-agent /usr/bin/ssh-add /usr/bin/ssh-keygen /usr/bin/ssh /usr/sbin/sshd /usr/bin/python3; do
    [ -x "$t" ] || { echo "bench/ssh-agent.sh: $t is missing (openssh-client, openssh-server, python3)" >&2; exit 1; }
done
if ! command -v hyperfine >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
        { echo "bench/ssh-agent.sh: hyperfine is missing and apt-get could not install it" >&2; exit 1; }
fi
hyperfine -N --version >/dev/null 2>&1 || { echo "bench/ssh-agent.sh: this hyperfine has no -N" >&2; exit 1; }
tpm_why=""   # why the TPM key is not measured; empty while it may be
[ -x /usr/bin/swtpm ] || tpm_why="/usr/bin/swtpm is missing (Debian's swtpm package; scripts/setup.sh installs it)"
client="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/agentclient.py"
python=/usr/bin/python3

started=$EPOCHREALTIME
log() { printf '[%6.1fs] %s\n' "$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$*" >&2; }
die() { echo "bench/ssh-agent.sh: $*" >&2; exit 1; }
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# utime + stime of a process and all its threads, in clock ticks (comm has no spaces here).
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
hz=$(getconf CLK_TCK)

work=$(mktemp -d /tmp/keychainfs-agent-bench.XXXXXX)
chmod 700 "$work"
unset SSH_AUTH_SOCK SSH_AGENT_PID KEYCHAINFS_TCTI   # the daemon reaches only this run's swtpm, if any
export KEYCHAINFS_RUNTIME_DIR="$work/run" KEYCHAINFS_DEVICE_KEY="$work/device.key" KEYCHAINFS_VAULT="$work/bench.vault"
kc_agent_pid=""; ossh_agent_pid=""; sshd_pid=""; swtpm_pid=""

cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    set +e
    for pid in $kc_agent_pid $ossh_agent_pid $sshd_pid; do
        kill "$pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    done
    [ -e "$KEYCHAINFS_VAULT" ] && timeout 20 "$kc" stop >/dev/null 2>&1
    if [ -n "$swtpm_pid" ]; then   # after the daemon, its client
        kill "$swtpm_pid" 2>/dev/null
        for _ in $(seq 50); do kill -0 "$swtpm_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$swtpm_pid" 2>/dev/null
    fi
    ((keep)) || rm -rf "$work/swtpm"   # its state (also removed with $work below)
    if ((keep)); then
        echo "bench/ssh-agent.sh: kept $work" >&2
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "bench/ssh-agent.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average at the start: $load_start ($(nproc) cores); keychainfs from $bindir ($(date -u -r "$kc" '+%Y-%m-%d %H:%M UTC'))"

# ---------------------------------------------------------------- keys, agents
ssh-keygen -q -t ed25519 -N '' -C bench-ed25519 -f "$work/ed25519"
ssh-keygen -q -t ecdsa -b 256 -m PEM -N '' -C bench-p256 -f "$work/p256"
keys=(ed25519 p256)

# swtpm on two adjacent free ports of 127.0.0.1 (server P, control P+1), as the tests'
# SoftwareTPM: another process may take them between the probe and swtpm's bind, so a start
# that does not answer is retried on other ports. Its TCTI is exported before the daemon starts.
tpm_port=""
if [ -z "$tpm_why" ]; then
    mkdir -m 0700 "$work/swtpm"
    for attempt in 1 2 3 4 5; do
        p=$($python -c '
import socket
for _ in range(20):
    a = socket.socket(); a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]; b = socket.socket()
    try:
        if p < 65535:
            b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError:
        pass
    finally:
        a.close(); b.close()')
        [ -n "$p" ] || continue
        /usr/bin/swtpm socket --tpmstate "dir=$work/swtpm" --tpm2 \
            --server "type=tcp,port=$p,bindaddr=127.0.0.1" --ctrl "type=tcp,port=$((p + 1)),bindaddr=127.0.0.1" \
            --flags not-need-init,startup-clear > "$work/swtpm.log" 2>&1 &
        swtpm_pid=$!
        for _ in $(seq 200); do
            kill -0 "$swtpm_pid" 2>/dev/null || break
            (exec 3<> "/dev/tcp/127.0.0.1/$p") 2>/dev/null && { tpm_port=$p; break; }
            sleep 0.05
        done
        [ -n "$tpm_port" ] && break
        kill -9 "$swtpm_pid" 2>/dev/null; wait "$swtpm_pid" 2>/dev/null || true; swtpm_pid=""
        log "swtpm did not answer on port $p (attempt $attempt): $(tail -1 "$work/swtpm.log")"
    done
    if [ -n "$tpm_port" ]; then
        export KEYCHAINFS_TCTI="swtpm:host=127.0.0.1,port=$tpm_port"
        log "swtpm pid $swtpm_pid on 127.0.0.1:$tpm_port (control $((tpm_port + 1))): KEYCHAINFS_TCTI=$KEYCHAINFS_TCTI"
    else
        tpm_why="swtpm did not start (5 attempts on free ports; the last: $(tail -1 "$work/swtpm.log" 2>/dev/null))"
    fi
fi

echo "bench pass phrase" | "$kc" create-keychain --kdf interactive >/dev/null
mkdir -m 0700 "$work/agent"   # the agent refuses a directory others may write to
eval "$("$kc" ssh-agent -s -a "$work/agent/kc.sock")" >/dev/null
kc_sock=$SSH_AUTH_SOCK; kc_agent_pid=$SSH_AGENT_PID
unset SSH_AUTH_SOCK SSH_AGENT_PID
[ -S "$kc_sock" ] && kill -0 "$kc_agent_pid" 2>/dev/null || die "keychainfs ssh-agent did not start"
daemon_pid=$(pgrep -f -x -- ".*/keychainfs-daemon daemon $KEYCHAINFS_VAULT" | head -1)
[ -n "$daemon_pid" ] || die "no keychainfs daemon for $KEYCHAINFS_VAULT"

ossh_sock="$work/agent/openssh.sock"
/usr/bin/ssh-agent -D -a "$ossh_sock" > "$work/openssh-agent.log" 2>&1 &
ossh_agent_pid=$!
for _ in $(seq 100); do [ -S "$ossh_sock" ] && break; sleep 0.05; done
[ -S "$ossh_sock" ] || die "ssh-agent did not start: $(cat "$work/openssh-agent.log")"

for k in "${keys[@]}"; do
    SSH_AUTH_SOCK=$kc_sock ssh-add -q "$work/$k" 2> "$work/ssh-add.err" ||
        die "ssh-add $k to keychainfs's agent failed: $(cat "$work/ssh-add.err")"
    SSH_AUTH_SOCK=$ossh_sock ssh-add -q "$work/$k" 2> "$work/ssh-add.err" ||
        die "ssh-add $k to ssh-agent failed: $(cat "$work/ssh-add.err")"
    mkdir -p "$work/file"; mv "$work/$k" "$work/file/$k"   # beside the .pub only the agents can sign
done
for s in "$kc_sock" "$ossh_sock"; do
    for k in "${keys[@]}"; do
        # the whole list first: grep -q would close the pipe early, and a client writing line by
        # line (PYTHONUNBUFFERED) would then fail with EPIPE, which pipefail takes for a missing key
        grep -qF "$(cut -d' ' -f2 "$work/$k.pub")" <<< "$($python "$client" list "$s")" || die "$s does not offer the $k key"
    done
done
log "keychainfs ssh-agent pid $kc_agent_pid (daemon $daemon_pid), ssh-agent pid $ossh_agent_pid: both hold the Ed25519 and P-256 keys"
tpm_keys=()
if [ -n "$tpm_port" ]; then
    "$kc" generate-key -t ecdsa --tpm -l bench-tpm-p256 --ssh > "$work/tpm-p256.pub" 2> "$work/generate-key.err" ||
        die "keychainfs generate-key -t ecdsa --tpm failed: $(cat "$work/generate-key.err")"
    [ "$(cut -d' ' -f1 "$work/tpm-p256.pub")" = ecdsa-sha2-nistp256 ] || die "generate-key --tpm printed $(cat "$work/tpm-p256.pub")"
    grep -qF "$(cut -d' ' -f2 "$work/tpm-p256.pub")" <<< "$($python "$client" list "$kc_sock")" || die "$kc_sock does not offer the TPM key"
    tpm_keys=(tpm-p256)
    log "keychainfs's agent also holds a P-256 key made in swtpm (generate-key --tpm)"
fi

# ---------------------------------------------------------------- signatures per second
failed=0
declare -A rate cpu_agent cpu_daemon cpu_tpm ops_total errs
sign_run() {  # sign_run AGENT(kc|ossh) KEY CLIENTS: one run; appends its rate, counts its CPU
    local agent=$1 k=$2 c=$3 sock pid out a0 d0 t0=0 a1 d1 t1=0 r ops e
    if [ "$agent" = kc ]; then sock=$kc_sock; pid=$kc_agent_pid; else sock=$ossh_sock; pid=$ossh_agent_pid; fi
    a0=$(cpu_ticks "$pid"); d0=$(cpu_ticks "$daemon_pid"); [ -z "$swtpm_pid" ] || t0=$(cpu_ticks "$swtpm_pid")
    out=$($python "$client" sign "$sock" "$work/$k.pub" --seconds "$seconds" --clients "$c" 2> "$work/client.err") || true
    a1=$(cpu_ticks "$pid"); d1=$(cpu_ticks "$daemon_pid"); [ -z "$swtpm_pid" ] || t1=$(cpu_ticks "$swtpm_pid")
    r=$(tr ' ' '\n' <<< "$out" | sed -n 's/^rate=//p'); ops=$(tr ' ' '\n' <<< "$out" | sed -n 's/^ops=//p')
    e=$(tr ' ' '\n' <<< "$out" | sed -n 's/^errors=//p')
    if [ -z "$r" ]; then r=0; ops=0; e=${e:-1}; fi
    if ((e)) || [ -s "$work/client.err" ]; then
        failed=1
        log "$agent $k $c clients: $e errors: $(head -3 "$work/client.err" | tr '\n' ' ')"
    fi
    local id="$agent.$k.$c"
    rate[$id]="${rate[$id]:-} $r"
    ops_total[$id]=$(( ${ops_total[$id]:-0} + ops ))
    errs[$id]=$(( ${errs[$id]:-0} + e ))
    cpu_agent[$id]=$(( ${cpu_agent[$id]:-0} + a1 - a0 ))
    cpu_daemon[$id]=$(( ${cpu_daemon[$id]:-0} + d1 - d0 ))
    cpu_tpm[$id]=$(( ${cpu_tpm[$id]:-0} + t1 - t0 ))
}
log "signatures: $rounds rounds of keychainfs then OpenSSH, $seconds s each, per key and client count"
for k in "${keys[@]}"; do
    for c in 1 4; do
        for ((i = 1; i <= rounds; i++)); do
            sign_run kc "$k" "$c"
            sign_run ossh "$k" "$c"
        done
        log "$k, $c clients: keychainfs ${rate[kc.$k.$c]# }; OpenSSH ${rate[ossh.$k.$c]# }"
    done
done
for k in "${tpm_keys[@]}"; do   # keychainfs's agent only: OpenSSH's has no TPM key
    for c in 1 4; do
        for ((i = 1; i <= rounds; i++)); do sign_run kc "$k" "$c"; done
        log "$k, $c clients: keychainfs ${rate[kc.$k.$c]# }"
    done
done

# ---------------------------------------------------------------- ssh logins
# sshd on a free port of 127.0.0.1 (another run may take it between the probe and the bind:
# then another port is tried).
mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -C bench-host -f "$work/host_ed25519"
for k in "${keys[@]}" "${tpm_keys[@]}"; do cat "$work/$k.pub"; done > "$work/authorized_keys"
port=""
for attempt in 1 2 3 4 5; do
    p=$($python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat > "$work/sshd_config" <<EOF
ListenAddress 127.0.0.1:$p
HostKey $work/host_ed25519
AuthorizedKeysFile $work/authorized_keys
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
PidFile none
EOF
    : > "$work/sshd.log"
    /usr/sbin/sshd -D -f "$work/sshd_config" -E "$work/sshd.log" &
    sshd_pid=$!
    for _ in $(seq 100); do
        grep -q "Server listening on 127.0.0.1 port $p" "$work/sshd.log" && { port=$p; break; }
        kill -0 "$sshd_pid" 2>/dev/null || break
        sleep 0.05
    done
    [ -n "$port" ] && break
    kill "$sshd_pid" 2>/dev/null; wait "$sshd_pid" 2>/dev/null || true; sshd_pid=""
    log "sshd could not listen on port $p (attempt $attempt): $(tail -1 "$work/sshd.log")"
done
[ -n "$port" ] || die "sshd did not start"
echo "[127.0.0.1]:$port $(cut -d' ' -f1-2 "$work/host_ed25519.pub")" > "$work/known_hosts"
ssh_cmd() {  # ssh_cmd SOCKET KEY: the login, as one command line for hyperfine -N (no spaces in paths)
    local id="$work/$2.pub"   # through the agent at SOCKET; with SOCKET none, the key file itself
    [ "$1" = none ] && id="$work/file/$2"
    echo "/usr/bin/ssh -F /dev/null -o BatchMode=yes -o IdentityAgent=$1 -o IdentitiesOnly=yes" \
         "-o IdentityFile=$id -o PreferredAuthentications=publickey" \
         "-o UserKnownHostsFile=$work/known_hosts -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes" \
         "-o LogLevel=ERROR -p $port root@127.0.0.1 true"
}
[[ "$work" != *" "* ]] || die "the work directory has a space in its name"
for k in "${keys[@]}"; do
    for s in "$kc_sock" "$ossh_sock" none; do
        # shellcheck disable=SC2046 # the command line is split into words on purpose
        $(ssh_cmd "$s" "$k") 2> "$work/ssh.err" ||
            die "ssh with the $k key through $s failed: $(cat "$work/ssh.err"); sshd: $(tail -3 "$work/sshd.log")"
    done
done
for k in "${tpm_keys[@]}"; do
    # shellcheck disable=SC2046 # the command line is split into words on purpose
    $(ssh_cmd "$kc_sock" "$k") 2> "$work/ssh.err" ||
        die "ssh with the $k key through $kc_sock failed: $(cat "$work/ssh.err"); sshd: $(tail -3 "$work/sshd.log")"
done
log "ssh logins to sshd on 127.0.0.1:$port: hyperfine -N -w 3 -r $runs, per key"
declare -A login_ms
for k in "${keys[@]}"; do
    hyperfine -N -w 3 -r "$runs" --style none --export-json "$work/hyperfine-$k.json" \
        -n kc "$(ssh_cmd "$kc_sock" "$k")" -n ossh "$(ssh_cmd "$ossh_sock" "$k")" -n file "$(ssh_cmd none "$k")" > "$work/hyperfine-$k.out" 2>&1 ||
        { failed=1; log "hyperfine for $k failed: $(tail -5 "$work/hyperfine-$k.out")"; continue; }
    while read -r name ms; do login_ms[$name.$k]=$ms; done < <($python -c '
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(r["command"], "%.2f" % (r["median"] * 1000))' "$work/hyperfine-$k.json")
done
for k in "${tpm_keys[@]}"; do
    hyperfine -N -w 3 -r "$runs" --style none --export-json "$work/hyperfine-$k.json" \
        -n kc "$(ssh_cmd "$kc_sock" "$k")" > "$work/hyperfine-$k.out" 2>&1 ||
        { failed=1; log "hyperfine for $k failed: $(tail -5 "$work/hyperfine-$k.out")"; continue; }
    login_ms[kc.$k]=$($python -c '
import json, sys
print("%.2f" % (json.load(open(sys.argv[1]))["results"][0]["median"] * 1000))' "$work/hyperfine-$k.json")
done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- results
echo
echo "SSH agent: keychainfs ssh-agent against OpenSSH's ssh-agent ($(ssh -V 2>&1 | cut -d, -f1)), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); load average at the start $load_start, at the end $load_end"
echo
echo "Signatures per second (bench/agentclient.py, $seconds s runs, median of $rounds interleaved rounds; ratio = keychainfs / OpenSSH, target >= 0.67):"
printf '%-8s %7s %12s %12s %7s %7s   %s\n' key clients keychainfs OpenSSH ratio target "errors (keychainfs/OpenSSH)"
for k in "${keys[@]}"; do
    for c in 1 4; do
        # shellcheck disable=SC2086 # the rates are a list of words
        a=$(median ${rate[kc.$k.$c]}); b=$(median ${rate[ossh.$k.$c]})
        r=$(ratio "$a" "$b")
        met=$(awk -v r="$r" 'BEGIN { print (r + 0 >= 0.67) ? "met" : "MISSED" }')
        printf '%-8s %7s %12.0f %12.0f %7s %7s   %s/%s\n' "$k" "$c" "$a" "$b" "$r" "$met" "${errs[kc.$k.$c]}" "${errs[ossh.$k.$c]}"
    done
done
for k in "${tpm_keys[@]}"; do   # no OpenSSH figure; keychainfs's software P-256 key beside it
    for c in 1 4; do
        # shellcheck disable=SC2086 # the rates are a list of words
        a=$(median ${rate[kc.$k.$c]}); sw=$(median ${rate[kc.p256.$c]})
        printf '%-8s %7s %12.0f %12s %7s %7s   %s/%s   (keychainfs software p256: %.0f; TPM / software %s)\n' \
            "$k" "$c" "$a" - - - "${errs[kc.$k.$c]}" - "$sw" "$(ratio "$a" "$sw")"
    done
done
per() { awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN { if (n > 0) printf "%.1f", t / hz / n * 1e6; else print "-" }'; }
echo
echo "CPU per signature, microseconds (user + system over all runs above, /proc/PID/stat; the client's not counted):"
printf '%-8s %7s %16s %17s %16s\n' key clients "keychainfs agent" "keychainfs daemon" "OpenSSH agent"
for k in "${keys[@]}" "${tpm_keys[@]}"; do
    for c in 1 4; do
        printf '%-8s %7s %16s %17s %16s' "$k" "$c" "$(per "${cpu_agent[kc.$k.$c]}" "${ops_total[kc.$k.$c]}")" \
            "$(per "${cpu_daemon[kc.$k.$c]}" "${ops_total[kc.$k.$c]}")" "$(per "${cpu_agent[ossh.$k.$c]:-0}" "${ops_total[ossh.$k.$c]:-0}")"
        [[ "$k" != tpm-* ]] && echo || echo "   (swtpm: $(per "${cpu_tpm[kc.$k.$c]}" "${ops_total[kc.$k.$c]}"))"
    done
done
echo
echo "ssh -o IdentityAgent=SOCK ... root@127.0.0.1 true (sshd -D on port $port; hyperfine -N -w 3 -r $runs; median ms;"
echo "ratio = keychainfs / OpenSSH time, target <= 1.5; \"no agent\": IdentityAgent=none with the private key file, the floor):"
printf '%-8s %12s %12s %9s %7s %7s\n' key keychainfs OpenSSH "no agent" ratio target
for k in "${keys[@]}"; do
    a=${login_ms[kc.$k]:-}; b=${login_ms[ossh.$k]:-}
    if [ -z "$a" ] || [ -z "$b" ]; then printf '%-8s %12s\n' "$k" "failed"; continue; fi
    r=$(ratio "$a" "$b")
    printf '%-8s %12s %12s %9s %7s %7s\n' "$k" "$a" "$b" "${login_ms[file.$k]:--}" "$r" \
        "$(awk -v r="$r" 'BEGIN { print (r + 0 <= 1.5) ? "met" : "MISSED" }')"
done
for k in "${tpm_keys[@]}"; do   # through keychainfs's agent only; its software P-256 key beside it
    a=${login_ms[kc.$k]:-}; sw=${login_ms[kc.p256]:-}
    if [ -z "$a" ]; then printf '%-8s %12s\n' "$k" "failed"; continue; fi
    printf '%-8s %12s %12s %9s %7s %7s   (keychainfs software p256: %s; TPM / software %s)\n' "$k" "$a" - - - - \
        "${sw:--}" "$(ratio "$a" "${sw:-0}")"
done
echo
if ((${#tpm_keys[@]})); then
    echo "TPM key (tpm-p256): P-256, made by \`keychainfs generate-key -t ecdsa --tpm\` in"
    echo "$(/usr/bin/swtpm --version 2>&1 | sed -n '1s/.*version \([^,]*\).*/swtpm \1/p') (swtpm socket --tpm2, TCP on 127.0.0.1:$tpm_port); each signature is a TPM2_Sign by the daemon;"
    echo "OpenSSH's agent has no TPM key (\"-\")."
else
    echo "TPM keys: not measured: $tpm_why."
fi
((failed == 0)) || { echo "bench/ssh-agent.sh: some signatures or logins failed (see above)" >&2; exit 1; }
