#!/usr/bin/env bash
# Fleet sync figures (issue 17, "Benchmark"; docs/sync.md), on one machine, in one run:
#   - propagation latency: a synchronizable add through host A's daemon until its file exists in
#     host B's mount (p50, p99 over --changes adds, one at a time);
#   - the baseline in the same run: INSERT + NOTIFY to a listener on the same server through
#     libpq, no keychainfs in between (keychainfs-bench sync --baseline);
#   - throughput: --burst adds sent as fast as one client can, until all are in B's mount;
#   - a new host C joining a circle whose server holds --new-host items: until it is a member,
#     and until it has read the whole log;
#   - with --new-host-copy K: a new host D (a daemon) joining a circle whose server holds K
#     items written through COPY (keychainfs-bench sync-newhost: a writer's vault filled with
#     Vault.addAll, its records sealed and signed by the record code a daemon uses, loaded with
#     \copy; a daemon's adds run at hundreds a second), until it has read the whole log, with
#     the CPU seconds of D's daemon; then the same read by an engine in the bench's process;
#   - with --fleet "10 50 200" (or 10,50,200): for each N, N sync engines in one process in one
#     circle, with the connections each engine held before issue 32, with shared ones, and (when
#     PgBouncer is installed) as separate daemons would run them, each polling every 0.5 s
#     through PgBouncer in transaction mode (keychainfs-bench sync-fleet): one change until
#     every host has it, --fleet-changes changes spread over the hosts until all have all,
#     the server's backends and memory;
#     --fleet-only runs these alone; --fleet-modes "polled" (or held, shared) only those.
# A PostgreSQL cluster of its own (Debian's, run by a user made for the run, on a Unix socket
# in the work directory, fsync on), three vaults with their own device keys and daemons.
#
#   bench/sync.sh --kc PATH/keychainfs --bench PATH/keychainfs-bench [--changes N] [--burst M]
#                 [--new-host K] [--new-host-copy K] [--fleet "N ..."] [--fleet-changes M] [--fleet-only]
#                 [--fleet-modes "M ..."] [--keep]
# bench/run.sh --sync-only builds the release binaries and runs this. Needs root. Everything it
# starts, mounts and makes is undone on exit, also when interrupted.
set -euo pipefail

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; }
kc=""; kcbench=""; changes=1000; burst=10000; new_host=100000; keep=0
fleet=""; fleet_changes=1000; fleet_only=0; fleet_modes="held shared polled"; fleet_poll_ms=500; new_host_copy=0
while (($#)); do
    case "$1" in
        --kc) shift; kc=${1:?--kc needs a path} ;;
        --bench) shift; kcbench=${1:?--bench needs a path} ;;
        --changes) shift; changes=${1:?--changes needs a number} ;;
        --burst) shift; burst=${1:?--burst needs a number} ;;
        --new-host) shift; new_host=${1:?--new-host needs a number} ;;
        --new-host-copy) shift; new_host_copy=${1:?--new-host-copy needs a number} ;;
        --fleet) shift; fleet=${1:?--fleet needs host counts, for example "10 50 200"} ;;
        --fleet-changes) shift; fleet_changes=${1:?--fleet-changes needs a number} ;;
        --fleet-only) fleet_only=1 ;;
        --fleet-modes) shift; fleet_modes=${1:?--fleet-modes needs modes: held, shared, polled} ;;
        --keep) keep=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "bench/sync.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
fleet=${fleet//,/ }
for n in "$changes" "$burst" "$new_host" "$fleet_changes" $fleet; do
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench/sync.sh: counts are positive numbers" >&2; exit 2; }
done
((new_host >= changes + burst)) || new_host=$((changes + burst))
((fleet_only == 0)) || [ -n "$fleet" ] || { echo "bench/sync.sh: --fleet-only needs --fleet" >&2; exit 2; }
[ -x "$kc" ] && [ -x "$kcbench" ] || { echo "bench/sync.sh: --kc and --bench name the built binaries" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench/sync.sh: run as root (it mounts and makes a user)" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pgbin/postgres" ] || { echo "bench/sync.sh: PostgreSQL is not installed (scripts/setup.sh installs it)" >&2; exit 1; }

started=$EPOCHREALTIME
log() { printf '[%6.1fs] %s\n' "$(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" "$*" >&2; }
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

work=$(mktemp -d /tmp/keychainfs-sync-bench.XXXXXX)
chmod 755 "$work"
pguser="kcsb$$"
pass="keychainfs sync bench passphrase"
mounted=""

cleanup() {
    local rc=$? h
    trap - EXIT INT TERM
    set +e
    if [ -n "$mounted" ] && grep -qs " $mounted " /proc/mounts; then
        host b timeout 10 "$kc" unmount "$mounted" >/dev/null 2>&1
        grep -qs " $mounted " /proc/mounts && umount -l "$mounted"
    fi
    for h in a b c d; do [ -e "$work/$h/$h.vault" ] && host "$h" timeout 20 "$kc" stop >/dev/null 2>&1; done
    [ -f "$work/pg/pooler.pid" ] && kill -INT "$(cat "$work/pg/pooler.pid")" 2>/dev/null
    [ -d "$work/pg/data" ] && runuser -u "$pguser" -- "$pgbin/pg_ctl" -D "$work/pg/data" -w -m fast stop >/dev/null 2>&1
    # userdel refuses a user with a process left: give the server's last ones time to end.
    for _ in $(seq 50); do pgrep -u "$pguser" >/dev/null 2>&1 || break; sleep 0.2; done
    id "$pguser" >/dev/null 2>&1 && { userdel "$pguser" 2>/dev/null || echo "bench/sync.sh: cannot remove user $pguser" >&2; }
    getent group "$pguser" >/dev/null && groupdel "$pguser" 2>/dev/null
    if grep -q " $work/" /proc/mounts; then
        echo "bench/sync.sh: something is still mounted under $work; not removing it" >&2
    elif ((keep)); then
        echo "bench/sync.sh: kept $work" >&2
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "bench/sync.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# Host NAME: its own runtime directory, device key and vault.
host() {
    local h=$1; shift
    KEYCHAINFS_RUNTIME_DIR="$work/$h/run" KEYCHAINFS_DEVICE_KEY="$work/$h/device.key" KEYCHAINFS_VAULT="$work/$h/$h.vault" "$@"
}
status_field() { host "$1" "$kc" sync status --json | python3 -c "import json,sys; print(json.load(sys.stdin).get('$2', ''))"; }
psql_() { runuser -u "$pguser" -- "$pgbin/psql" -h "$work/pg/sock" -U kcbench -d postgres -At -c "$1"; }

log "PostgreSQL $("$pgbin/postgres" --version | awk '{ print $3 }') in $work/pg"
useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser"
mkdir -p "$work/pg/sock"
chown -R "$pguser" "$work/pg"
runuser -u "$pguser" -- "$pgbin/initdb" -D "$work/pg/data" -U kcbench --auth=trust --no-instructions >/dev/null
runuser -u "$pguser" -- "$pgbin/pg_ctl" -D "$work/pg/data" -w -l "$work/pg/server.log" \
    -o "-k $work/pg/sock -c listen_addresses='' -c max_connections=500" start >/dev/null
conninfo="host=$work/pg/sock dbname=postgres user=kcbench"
# PgBouncer in transaction mode in front of it, for the fleet's polling hosts: 20 server
# connections for every database, whatever the number of clients.
pooler_pool=20
if [ -n "$fleet" ] && [ -x /usr/sbin/pgbouncer ]; then
    mkdir -p "$work/pg/pooler"
    echo '"kcbench" ""' > "$work/pg/pooler.users"
    printf '%s\n' "[databases]" "* = host=$work/pg/sock" "[pgbouncer]" "listen_addr =" "unix_socket_dir = $work/pg/pooler" \
        "listen_port = 6432" "auth_type = trust" "auth_file = $work/pg/pooler.users" "pool_mode = transaction" \
        "default_pool_size = $pooler_pool" "max_client_conn = 5000" "logfile = $work/pg/pooler.log" \
        "pidfile = $work/pg/pooler.pid" > "$work/pg/pooler.ini"
    chown -R "$pguser" "$work/pg"
    runuser -u "$pguser" -- /usr/sbin/pgbouncer -d "$work/pg/pooler.ini" || echo "bench/sync.sh: PgBouncer did not start" >&2
    for _ in $(seq 100); do [ -S "$work/pg/pooler/.s.PGSQL.6432" ] && break; sleep 0.05; done
fi

# The fleet: N engines in one process, held connections (two each, as before issue 32) and
# shared ones (a pool and one LISTEN connection), one fresh database each so no run's log
# weighs on the next.
fleet_report=""
run_fleet() {
    local n mode db res server
    for n in $fleet; do
        for mode in $fleet_modes; do
            if [ "$mode" = polled ] && [ ! -S "$work/pg/pooler/.s.PGSQL.6432" ]; then
                log "fleet: no PgBouncer (apt-get install pgbouncer): polled hosts not measured"
                continue
            fi
            db="fleet_${mode}_$n"
            psql_ "CREATE DATABASE $db" >/dev/null
            server="host=$work/pg/sock dbname=$db user=kcbench"
            [ "$mode" = polled ] && server="host=$work/pg/pooler port=6432 dbname=$db user=kcbench"
            log "fleet: $n hosts, $mode connections, $fleet_changes changes"
            res=$("$kcbench" sync-fleet --server "$server" --hosts "$n" --changes "$fleet_changes" --connections "$mode" --poll "$fleet_poll_ms" \
                --dir "$work" --baseline --baseline-server "host=$work/pg/sock dbname=$db user=kcbench") \
                || { echo "bench/sync.sh: sync-fleet failed at $n hosts ($mode)" >&2; res="hosts=$n connections=$mode failed=1"; }
            fleet_report+="$res"$'\n'
        done
    done
}
fleet_line() {
    local line=$1 f
    f() { tr ' ' '\n' <<< "$line" | sed -n "s/^$1=//p"; }
    printf '  %5s hosts %-6s  all hosts p50 %8s ms  p99 %8s ms | %s changes converged in %7s s, %s/%s vaults complete | backends %4s  server RSS %7s MiB (own %6s MiB) | baseline p50 %s ms p99 %s ms\n' \
        "$(f hosts)" "$(f connections)" "$(f all_hosts_p50_ms)" "$(f all_hosts_p99_ms)" "$(f changes)" "$(f converged_s)" \
        "$(f vaults_complete)" "$(f vaults)" "$(f backends_max)" "$(f server_rss_max_mib)" "$(f server_anon_max_mib)" \
        "$(f notify_p50_ms)" "$(f notify_p99_ms)"
}
fleet_summary() {
    local line
    echo
    echo "Fleet sync at fleet size, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    while IFS= read -r line; do if [ -n "$line" ]; then fleet_line "$line"; fi; done <<< "$fleet_report"
}
if ((fleet_only)); then
    run_fleet
    fleet_summary
    exit 0
fi

for h in a b c d; do
    mkdir -p "$work/$h/run"
    chmod 755 "$work/$h" "$work/$h/run"
done
for h in a b; do echo "$pass" | host "$h" "$kc" create-keychain --kdf interactive >/dev/null; done
host a "$kc" sync init --server "$conninfo" --name bench-a >/dev/null
join() {
    local h=$1 code t
    code=$(host "$h" "$kc" sync join --server "$conninfo" --name "bench-$h" 2>/dev/null)
    host a "$kc" sync approve "$code" >/dev/null
    until [ "$(status_field "$h" state)" = member ]; do sleep 0.1; done
}
join b
mounted="$work/mnt-b"; mkdir "$mounted"
host b "$kc" mount "$mounted" >/dev/null
log "A and B in a circle, B mounted at $mounted"

log "propagation: $changes adds on A, each until its file is in B's mount; then $changes INSERT+NOTIFY round trips"
res=$(host a "$kcbench" sync --vault "$work/a/a.vault" --mount "$mounted" --changes "$changes" --prefix l --baseline "$conninfo")
log "throughput: $burst adds on A, until all are in B's mount"
res="$res $(host a "$kcbench" sync --vault "$work/a/a.vault" --mount "$mounted" --burst "$burst" --prefix t)"
get() { tr ' ' '\n' <<< "$res" | sed -n "s/^$1=//p"; }

# The new host: B stops (it would pull the same log meanwhile), A adds up to new_host items.
host b "$kc" unmount "$mounted" >/dev/null; mounted=""
host b "$kc" stop >/dev/null
fill=$((new_host - changes - burst))
if ((fill > 0)); then
    log "filling: $fill more adds on A, until the server holds $new_host items"
    host a "$kcbench" sync --vault "$work/a/a.vault" --fill "$fill" --prefix f >/dev/null
fi
fill_started=$(now)
until [ "$(psql_ "SELECT count(*) FROM keychainfs.items WHERE NOT deleted")" -ge "$new_host" ]; do sleep 0.5; done
log "the server holds $new_host items ($(since "$fill_started") s after the last add)"
last=$(psql_ "SELECT max(seq) FROM keychainfs.log")
echo "$pass" | host c "$kc" create-keychain --kdf interactive >/dev/null
log "new host: C joins, until it has read the log up to $last"
t0=$(now)
join c
member_s=$(since "$t0")
until [ "$(status_field c cursor)" -ge "$last" ] 2>/dev/null; do sleep 0.5; done
all_s=$(since "$t0")
count_c=$(host c "$kc" dump-keychain --json | python3 -c "import json,sys; print(sum(1 for i in json.load(sys.stdin) if i['attributes'].get('svce') == 'sync-bench'))")

cat <<REPORT

Fleet sync, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end
  propagation, add on A to the file in B's mount ($changes changes, one at a time):
      p50 $(get latency_p50_ms) ms   p99 $(get latency_p99_ms) ms   mean $(get latency_mean_ms) ms   max $(get latency_max_ms) ms
      of which the add through A's daemon: p50 $(get add_p50_ms) ms   p99 $(get add_p99_ms) ms
  baseline, INSERT + NOTIFY to a listener on the same server through libpq ($changes round trips):
      p50 $(get notify_p50_ms) ms   p99 $(get notify_p99_ms) ms   mean $(get notify_mean_ms) ms
  throughput, $burst adds on A as fast as one client sends them:
      sent in $(get burst_send_s) s ($(get burst_send_rate)/s), all in B's mount after $(get burst_all_s) s ($(get burst_rate)/s)
  a new host receives $new_host items:
      member $member_s s after sync join, the whole log read after $all_s s ($(awk -v n="$new_host" -v s="$all_s" 'BEGIN { printf "%.0f", n / s }')/s); C holds $count_c of them
REPORT
if ((new_host_copy > 0)); then
    # A database of its own: a writer and a member that reads nothing (holding pruning back,
    # as B does above) in a circle, the writer's records loaded with \copy.
    db=newhost; cdb="host=$work/pg/sock dbname=$db user=kcbench"
    psql_ "CREATE DATABASE $db" >/dev/null
    mkdir -p "$work/w"; chmod 755 "$work/w"
    log "new host (copy): sealing $new_host_copy records of a writer's items"
    t0=$(now)
    "$kcbench" sync-newhost --server "$cdb" --dir "$work/w" --items "$new_host_copy" --fill-only --copy "$work/w/log.copy" >/dev/null
    chmod 644 "$work/w/log.copy"
    pdb() { runuser -u "$pguser" -- "$pgbin/psql" -h "$work/pg/sock" -U kcbench -d "$db" -At -c "$1"; }
    pdb "\copy keychainfs.log(circle, seq, token, version, deleted, record) FROM '$work/w/log.copy'" >/dev/null
    pdb "INSERT INTO keychainfs.items(circle, token, version, seq, deleted, record) SELECT circle, token, version, seq, deleted, record FROM keychainfs.log" >/dev/null
    pdb "UPDATE keychainfs.circles SET seq = (SELECT max(seq) FROM keychainfs.log)" >/dev/null
    rm -f "$work/w/log.copy"
    copy_last=$(pdb "SELECT max(seq) FROM keychainfs.log")
    log "the server holds $copy_last records ($(since "$t0") s); new host D joins"
    echo "$pass" | host d "$kc" create-keychain --kdf interactive >/dev/null
    t0=$(now)
    code=$(host d "$kc" sync join --server "$cdb" --name bench-d 2>/dev/null)
    "$kcbench" sync-newhost --server "$cdb" --dir "$work/w" --approve "$code" >/dev/null
    until [ "$(status_field d state)" = member ]; do sleep 0.1; done
    d_member_s=$(since "$t0")
    d_pid=""
    for p in /proc/[0-9]*; do
        if ls -l "$p/fd" 2>/dev/null | grep -q " $work/d/d.vault\$"; then d_pid=${p#/proc/}; break; fi
    done
    cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
    d_cpu0=$(cpu_of "$d_pid"); t1=$(now)
    until [ "$(status_field d cursor)" -ge "$copy_last" ] 2>/dev/null; do sleep 0.5; done
    d_read_s=$(since "$t1"); d_all_s=$(since "$t0")
    d_cpu=$(awk -v a="$d_cpu0" -v b="$(cpu_of "$d_pid")" -v t="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", (b - a) / t }')
    host d "$kc" stop >/dev/null 2>&1
    log "new host (copy): the same read by an engine in the bench's process"
    res_e=$("$kcbench" sync-newhost --server "$cdb" --dir "$work/w" --items "$new_host_copy")
    ge() { tr ' ' '\n' <<< "$res_e" | sed -n "s/^$1=//p"; }
    cat <<REPORT
  a new host receives $new_host_copy items written through COPY (load $(cut -d' ' -f1-3 /proc/loadavg)):
      daemon D: member $d_member_s s after sync join, the whole log read $d_read_s s later ($(awk -v n="$new_host_copy" -v s="$d_read_s" 'BEGIN { printf "%.0f", n / s }')/s, $d_all_s s in all); daemon CPU $d_cpu s ($(awk -v n="$new_host_copy" -v c="$d_cpu" 'BEGIN { printf "%.1f", c / n * 1000000 }') ms per 1,000 entries)
      engine in one process: $(ge newhost_s) s ($(ge newhost_rate)/s), CPU $(ge newhost_cpu_s) s ($(ge newhost_cpu_ms_per_1000) ms per 1,000 entries)
      baseline (above): INSERT + NOTIFY p50 $(get notify_p50_ms) ms
REPORT
fi
if [ -n "$fleet" ]; then
    for h in a b c; do [ -e "$work/$h/$h.vault" ] && host "$h" timeout 20 "$kc" stop >/dev/null 2>&1; done
    run_fleet
    fleet_summary
fi
