#!/bin/sh
# scripts/p3d-run: the command's exit status passes through, and the hint
# printed afterwards names the job folder that was written (with -j), or
# says that nothing was written.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
R=$P3D_SRC/scripts/p3d-run
fails=0
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

"$R" -o "$T/none" -- sh -c 'exit 3' 2> "$T/err"
[ $? -eq 3 ] || bad "exit status not passed through"
grep -q "^p3d-run: no trace file was written under '$T/none'" "$T/err" ||
    bad "nothing written, but: $(cat "$T/err")"

P3D_FAKE_SHM_DIR=$T P3D_GPU_DRIVER_SPREAD=1 LD_LIBRARY_PATH="$P3D_BUILD/fakes" \
    "$R" -o "$T/t" -j myjob -- "$P3D_BUILD/tests/gpu_driver" nccl 2 \
    > /dev/null 2> "$T/err" || bad "traced run failed: $(cat "$T/err")"
grep -q "^p3d-run: traces in '$T/t/myjob'; analyse with: p3d-analyze $T/t/myjob$" \
    "$T/err" || bad "hint: $(cat "$T/err")"
[ -f "$T/t/myjob/rank-00000.p3d" ] || bad "no trace in $T/t/myjob"
[ $fails -eq 0 ]
