#!/bin/sh
# The analyzer's layers (docs/architecture.md): analyzer/util, read, model,
# layout, match, time, hang, findings, analyse (the pipeline), views, bottom to top.  A folder's code may use
# its own folder and the folders below it, never one above: the model does
# not call into an analysis, and no analysis into a view.  Checked twice:
#   - includes: every #include "p3d_*.h" of a folder's files names a header
#     of its own folder or one below;
#   - calls: every p3d_* symbol an object file uses (nm's U) is defined in
#     its own folder or one below (the objects of the build).
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
layers="util read model layout match time hang findings analyse views"
A=$P3D_SRC/analyzer
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

level() { # level NAME: the layer number of the folder holding NAME, or -1
    i=0
    for l in $layers; do
        [ -e "$A/$l/$1" ] && { echo $i; return; }
        i=$((i + 1))
    done
    echo -1
}

i=0
for l in $layers; do
    for f in "$A/$l"/*.[ch]; do
        for h in $(sed -n 's/^#include "\(p3d_[a-z0-9_]*\.h\)".*/\1/p' "$f"); do
            [ "$h" = p3d_format.h ] && continue
            k=$(level "$h")
            [ "$k" -lt 0 ] && { fail "$l/$(basename "$f") includes $h, in no layer"; continue; }
            [ "$k" -gt "$i" ] &&
                fail "$l/$(basename "$f") includes $h, a layer above it"
        done
    done
    i=$((i + 1))
done

# Symbols: which layer defines each p3d_* function or object.
command -v nm > /dev/null || { echo "skip: no nm"; exit 77; }
defs=$(mktemp) && trap 'rm -f "$defs"' EXIT
i=0
for l in $layers; do
    for o in "$P3D_BUILD/analyzer/$l"/*.o; do
        [ -f "$o" ] || { echo "skip: no objects in $P3D_BUILD/analyzer/$l"; exit 77; }
        nm "$o" | awk -v i=$i -v o="$l/$(basename "$o")" \
            '$2 ~ /^[TDBR]$/ && $3 ~ /^p3d_/ {print $3, i, o}'
    done
    i=$((i + 1))
done > "$defs"
i=0
for l in $layers; do
    for o in "$P3D_BUILD/analyzer/$l"/*.o; do
        for s in $(nm -u "$o" | awk '$2 ~ /^p3d_/ {print $2}'); do
            d=$(awk -v s="$s" '$1 == s {print $2, $3; exit}' "$defs")
            [ -n "$d" ] || continue # the shim's or a test's
            [ "${d%% *}" -gt "$i" ] &&
                fail "$l/$(basename "$o") calls $s of ${d#* }, a layer above it"
        done
    done
    i=$((i + 1))
done
[ "$fails" -eq 0 ] && echo "layers: every include and call goes down ($layers)"
[ "$fails" -eq 0 ]
