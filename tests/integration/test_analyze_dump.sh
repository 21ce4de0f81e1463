#!/bin/sh
# --dump: the documented one-line-per-record text format.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/analyze_lib.sh"
"$G" --tp 2 --pp 2 --dp 1 --steps 1 --gpu "$T/j" || exit 1
"$A" --dump "$T/j/rank-00001.p3d" > "$T/d" || fail "rc=$?"
head -1 "$T/d" | grep -Eq '^header magic=P3DTRACE major=1 minor=0 hdr_len=256 flags=0x0001 chunk_bytes=65536 data_off=4096 rank=1 world_size=4 ' ||
    fail "header line: $(head -1 "$T/d")"
head -1 "$T/d" | grep -q ' hostname="node0\\"x" ' || fail "hostname not escaped"
sed -n 2p "$T/d" | grep -q '^chunk offset=4096 tid=4242 index=0$' || fail "chunk line"
grep -q '^cmdline offset=[0-9]* n_bytes=[0-9]* text="python3\\0pretrain_gpt.py\\0--tensor-model-parallel-size\\02\\0' "$T/d" ||
    fail "cmdline line"
grep -q '^unknown offset=[0-9]* tag=0x8077 len=16$' "$T/d" || fail "unknown optional record"
grep -Eq '^comm offset=[0-9]+ how=ncclCommInitRankConfig flags=0x00 comm_hash=0x[0-9a-f]{16} parent_hash=0x0000000000000000 .* nranks=2 rank=1 .* name=""$' "$T/d" ||
    fail "comm line"
grep -Eq '^op offset=[0-9]+ op=AllReduce dtype=9 redop=0 flags=0x00 op_id=[0-9]+ comm_hash=0x[0-9a-f]{16} seq=3 count=262144 bytes=524288 stream=0x0000000000005000 t_enter=[0-9]+ t_exit=[0-9]+ peer=-1 ret=0 tid=4242 group_id=0 stack_id=0 comm_rank=1$' "$T/d" ||
    fail "op line"
grep -Eq '^op offset=[0-9]+ op=Broadcast .* redop=255 ' "$T/d" || fail "broadcast line"
grep -Eq '^gpu_op offset=[0-9]+ source=2 algo=0 proto=0 nchannels=0 op_id=0 gpu_start=[0-9]+ gpu_end=[0-9]+$' "$T/d" ||
    fail "gpu_op line"
n_ops=$(grep -c '^op ' "$T/d")
[ "$n_ops" -gt 10 ] || fail "too few op lines ($n_ops)"
# a bad file: error naming file, exit 2
{ printf 'NOTATRACE'; head -c 600 /dev/zero; } > "$T/bad.p3d"
"$A" --dump "$T/bad.p3d" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "bad file rc=$rc"
grep -q "^p3d-analyze: error: '$T/bad.p3d': bad magic" "$T/err" || fail "bad file message: $(cat "$T/err")"
exit 0
