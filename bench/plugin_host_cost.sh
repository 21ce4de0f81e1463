#!/bin/sh
# plugin_host_cost.sh - host CPU ns per all-reduce on the calling thread
# for: untraced, P3D_GPU_TIMING=off, events, plugin (make bench-plugin).
# One process per setting and round, the settings' order rotated every
# round, so slow phases of the machine fall on all of them; median and
# p99 over rounds of each process's mean.  Over bench/null_nccl_plugin.c
# (an NCCL doing nothing but, in plugin mode, calling the plugin as NCCL
# 2.28.9 does per op) and bench/null_cudart.c (whose events cost nothing:
# the events figure is the shim's bookkeeping only).
#   ROUNDS (15), CALLS per process (200000), P3D_STACKS (0: call-site
#   stacks would add the same unwinding to every traced setting).
set -eu
: "${BUILD:?}"
b="$BUILD/bench/plugin/plugin_host_cost"
rounds=${ROUNDS:-15}
calls=${CALLS:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() {   # setting: prints ns per op
    case $1 in
    untraced) env P3D_STACKS="${P3D_STACKS:-0}" "$b" "$calls" ;;
    *) env P3D_TRACE_DIR="$tmp" P3D_JOB_ID="$1.$r" P3D_GPU_WINDOW=off \
           P3D_STACKS="${P3D_STACKS:-0}" P3D_GPU_TIMING="$1" \
           LD_PRELOAD="$BUILD/libp3dtrace.so" "$b" "$calls" ;;
    esac | sed -n 's/^ns_per_op //p'
}
set -- untraced off events plugin
r=0
while [ "$r" -lt "$rounds" ]; do
    for s in "$@"; do
        echo "$s $(one "$s")" >> "$tmp/all"
    done
    set -- "$2" "$3" "$4" "$1"     # rotate the order
    r=$((r + 1))
    rm -rf "${tmp:?}"/*.[0-9]*
done
python3 - "$tmp/all" "$rounds" "$calls" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    s, v = line.split()
    rows.setdefault(s, []).append(float(v))
print("thread CPU ns per all-reduce, %s rounds of %s calls" %
      (sys.argv[2], sys.argv[3]))
for s in ("untraced", "off", "events", "plugin"):
    v = sorted(rows[s])
    p99 = v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]
    print("%-9s median %8.1f  p99 %8.1f  min %8.1f" %
          (s, v[len(v) // 2], p99, v[0]))
PY
