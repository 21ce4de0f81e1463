#!/bin/sh
# The shim never follows a pre-placed symlink to write another file (a
# link to a victim file, a dangling link), writes only under the trace
# folder, and creates files and folders with the user's umask.
. "$(dirname "$0")/rel_lib.sh"
J=$T/traces/job
mkdir -p "$J"
printf 'precious\n' > "$T/victim"
ln -s "$T/victim" "$J/rank-00000.p3d"
ln -s "$T/created-through-link" "$J/rank-00001.p3d"
for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LD_PRELOAD=$SHIM timeout 60 "$REL_DRIVER" \
        "$REL_LIB" loop 10 > "$T/out" 2> "$T/err" ||
        fail "job harmed: $(cat "$T/err")"
    grep -qx 'loop 10 ok' "$T/out" || fail "output: $(cat "$T/out")"
done
[ "$(cat "$T/victim")" = precious ] || fail "victim file written"
[ -e "$T/created-through-link" ] && fail "file created through a link"
[ -L "$J/rank-00000.p3d" ] && [ -L "$J/rank-00001.p3d" ] ||
    fail "links replaced"
n=0
for f in "$J"/*.p3d; do
    [ -L "$f" ] && continue
    [ -f "$f" ] || fail "$f is not a regular file"
    want_ops "$f" 10
    n=$((n + 1))
done
[ "$n" = 2 ] || fail "want 2 trace files beside the links: $(ls -l "$J")"
# nothing outside the trace folder
extra=$(find "$T" -newer "$T/victim" -type f ! -path "$T/traces/*" \
    ! -name out ! -name err ! -name 'dump*' ! -name 'fake*' \
    ! -name '*.id*' | head -5)
[ -z "$extra" ] || fail "files outside the trace folder: $extra"
# umask
for m in 077:600:700 022:644:755; do
    u=${m%%:*} rest=${m#*:}
    fm=${rest%%:*} dm=${rest#*:}
    rm -rf "$T/traces"
    (umask "$u"; LD_PRELOAD=$SHIM "$REL_DRIVER" "$REL_LIB" loop 2 \
        > /dev/null) || fail "umask $u run"
    f=$(ls "$J"/*.p3d | head -1)
    [ "$(stat -c %a "$f")" = "$fm" ] ||
        fail "umask $u: file mode $(stat -c %a "$f"), want $fm"
    [ "$(stat -c %a "$J")" = "$dm" ] ||
        fail "umask $u: folder mode $(stat -c %a "$J"), want $dm"
done
