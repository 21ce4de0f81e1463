#!/bin/sh
# In a shared sticky trace folder, no job folder or P3D_TRACE_DIR that
# another user planted (a link, a folder of theirs) receives a trace: the
# ranks say so in one line each and write to <job>.<uid> (or, for a
# refused P3D_TRACE_DIR, run untraced); the job's output and status are
# as without the shim.  A link the user made keeps working.
# Plants as user nobody, so needs root (as in CI).
[ "$(id -u)" = 0 ] || { echo "skip: needs root to plant as nobody"; exit 77; }
id nobody > /dev/null 2>&1 || { echo "skip: no user nobody"; exit 77; }
. "$(dirname "$0")/rel_lib.sh"
SH=$T/shared          # a team's /tmp/traces
NOB=$T/nobodys        # a folder of the other user's
OWN=job.$(id -u)      # where refused job folders go
mkdir -m 1777 "$SH"
export P3D_TRACE_DIR=$SH

# reset: empty shared folder, empty folder of nobody's
reset() {
    rm -rf "$SH"/* "$SH"/.[!.]* "$NOB" "$T/moved"
    mkdir "$NOB" && chown nobody "$NOB" && chmod 0777 "$NOB"
}

# plant_link NAME TARGET: a link owned by nobody in the shared folder
plant_link() {
    ln -s "$2" "$SH/$1" && chown -h nobody "$SH/$1"
}

# rank CASE R: rank R of a 2-rank job under the shim; same stdout, status
# and non-p3dtrace stderr as the plain run.
timeout 60 "$REL_DRIVER" "$REL_LIB" loop 10 > "$T/plain" 2> "$T/plain.err"
st0=$?
rank() {
    RANK=$2 WORLD_SIZE=2 LD_PRELOAD=$SHIM timeout 60 "$REL_DRIVER" \
        "$REL_LIB" loop 10 > "$T/$1.$2.out" 2> "$T/$1.$2.err"
    st=$?
    [ "$st" = "$st0" ] || fail "$1 rank $2: status $st, want $st0"
    cmp -s "$T/plain" "$T/$1.$2.out" || fail "$1 rank $2: output differs"
    grep -v '^p3dtrace: ' "$T/$1.$2.err" | cmp -s - "$T/plain.err" ||
        fail "$1 rank $2: stderr: $(cat "$T/$1.$2.err")"
}

# refused CASE R PATH WHY: one warning, naming PATH and WHY
refused() {
    n=$(grep -c "^p3dtrace: warning: trace folder '$3' refused: $4" \
        "$T/$1.$2.err")
    [ "$n" = 1 ] || fail "$1 rank $2: want one refusal of $3: $(cat "$T/$1.$2.err")"
    [ "$(grep -c '^p3dtrace: ' "$T/$1.$2.err")" = 1 ] ||
        fail "$1 rank $2: more p3dtrace lines: $(cat "$T/$1.$2.err")"
}

# untouched: nothing in nobody's folder
untouched() {
    [ -z "$(ls -A "$NOB")" ] || fail "$1: written into nobody's folder: $(ls -A "$NOB")"
}

# traces_in CASE DIR RANKS...: DIR is ours, private, holds those ranks
traces_in() {
    c=$1 d=$2; shift 2
    [ -d "$d" ] && [ ! -L "$d" ] || fail "$c: no folder $d"
    [ "$(stat -c %u "$d")" = "$(id -u)" ] || fail "$c: $d not ours"
    for r in "$@"; do
        want_ops "$d/rank-0000$r.p3d" 10
    done
}

# 1: the job folder planted as nobody's link to nobody's folder
reset
plant_link job "$NOB"
rank link 0
rank link 1
untouched link
for r in 0 1; do
    refused link $r "$SH/job" "a symlink owned by another user"
done
traces_in link "$SH/$OWN" 0 1

# 2: the job folder planted as nobody's folder, mode 0777
reset
mkdir -m 0777 "$SH/job" && chown nobody "$SH/job"
rank dir 0
rank dir 1
[ -z "$(ls -A "$SH/job")" ] || fail "dir: written into nobody's folder"
for r in 0 1; do
    refused dir $r "$SH/job" "a folder owned by another user"
done
traces_in dir "$SH/$OWN" 0 1

# 3: rank 0 made the job folder; then nobody replaced it by a link
reset
rank late 0
[ "$(grep -c '^p3dtrace: ' "$T/late.0.err")" = 0 ] ||
    fail "late rank 0 warned: $(cat "$T/late.0.err")"
mv "$SH/job" "$T/moved"
plant_link job "$NOB"
rank late 1
untouched late
refused late 1 "$SH/job" "a symlink owned by another user"
traces_in late "$T/moved" 0
traces_in late "$SH/$OWN" 1

# 4: P3D_TRACE_DIR is our own link in the shared folder: followed
reset
mkdir "$T/real"
ln -s "$T/real" "$SH/mine"
for r in 0 1; do
    P3D_TRACE_DIR=$SH/mine rank ownlink $r
    [ ! -s "$T/ownlink.$r.err" ] ||
        fail "own link: warned: $(cat "$T/ownlink.$r.err")"
done
traces_in ownlink "$T/real/job" 0 1

# 5: P3D_TRACE_DIR is nobody's link in the shared folder: refused,
# untraced
reset
plant_link theirs "$NOB"
P3D_TRACE_DIR=$SH/theirs/sub rank theirlink 0
P3D_TRACE_DIR=$SH/theirs/sub rank theirlink 1
untouched theirlink
for r in 0 1; do
    refused theirlink $r "$SH/theirs" "a symlink owned by another user"
    grep -q "the job runs on untraced" "$T/theirlink.$r.err" ||
        fail "their link: not untraced: $(cat "$T/theirlink.$r.err")"
done
exit 0
