#!/usr/bin/env bash
# fuseops: the FUSE requests one command makes of one mount, counted by opcode, from the kernel's
# own tracepoints (fuse:fuse_request_send and fuse:fuse_request_end, Linux 6.14 and later).
#
#   bench/fuseops.sh MOUNTPOINT CMD [ARG...]
#
# Prints one line per opcode: `op=LOOKUP requests=N reply_bytes=B`, B the replies' total length
# (for READDIRPLUS, how full each reply is: the kernel asks for a page or more). The command's
# own output goes to /dev/null. A tracefs instance of its own, so it leaves the global trace
# (and anyone else using it) alone; removed on exit. Needs root.
set -euo pipefail

(($# >= 2)) || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
mnt=$1; shift
tracefs=/sys/kernel/tracing
[ -d "$tracefs/instances" ] || mount -t tracefs nodev "$tracefs" 2>/dev/null || true
[ -d "$tracefs/events/fuse/fuse_request_send" ] || { echo "fuseops: no fuse tracepoints in this kernel" >&2; exit 1; }
# The connection is the mount's device number in the kernel's encoding (major << 20 | minor).
dev=$(stat -c '%Hd %Ld' "$mnt" | awk '{ print $1 * 1048576 + $2 }')

inst="$tracefs/instances/fuseops.$$"
out=$(mktemp /tmp/fuseops.XXXXXX)
reader=""
cleanup() {
    set +e
    [ -d "$inst" ] && echo 0 > "$inst/tracing_on"
    [ -n "$reader" ] && { kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null; }
    [ -d "$inst" ] && rmdir "$inst"
    rm -f "$out"
}
trap cleanup EXIT
mkdir "$inst"
echo 16384 > "$inst/buffer_size_kb"
for e in fuse_request_send fuse_request_end; do
    echo "connection == $dev" > "$inst/events/fuse/$e/filter"
    echo 1 > "$inst/events/fuse/$e/enable"
done
cat "$inst/trace_pipe" > "$out" &
reader=$!
"$@" > /dev/null
sleep 0.2   # the last replies' events reach the pipe
echo 0 > "$inst/tracing_on"
sleep 0.2
kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null || true; reader=""
# send: "... req U opcode N (FUSE_NAME) len L"; end: "... req U len L error E"
awk '
    / fuse_request_send: / { for (i = 1; i <= NF; i++) { if ($i == "req") u = $(i + 1); if ($i == "opcode") n = $(i + 2) }
                             gsub(/[()]/, "", n); sub(/^FUSE_/, "", n); op[u] = n; count[n]++ }
    / fuse_request_end: /  { for (i = 1; i <= NF; i++) { if ($i == "req") u = $(i + 1); if ($i == "len") l = $(i + 1) }
                             if (u in op) { bytes[op[u]] += l; delete op[u] } }
    END { for (n in count) printf "op=%s requests=%d reply_bytes=%d\n", n, count[n], bytes[n] }
' "$out" | sort
