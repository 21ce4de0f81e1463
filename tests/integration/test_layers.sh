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
# the order is the Makefile's (one list: a new layer is added there only)
layers=$(sed -n 's/^ANALYZER_DIRS := //p' "$P3D_SRC/Makefile")
A=$P3D_SRC/analyzer
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ -n "$layers" ] || { echo "FAIL: no ANALYZER_DIRS in $P3D_SRC/Makefile"; exit 1; }
for d in "$A"/*/; do   # a folder the build does not know is not built
    d=$(basename "$d")
    [ "$d" = mpi ] && continue  # p3d-analyze-mpi's, outside the layers
    case " $layers " in *" $d "*) ;; *) fail "analyzer/$d is in no layer (ANALYZER_DIRS)";; esac
done

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
# Every function a layer's header declares is defined in that layer (a
# view's function declared by an analysis's header hides a call upward).
for l in $layers; do
    for h in "$A/$l"/*.h; do
        [ -f "$h" ] || continue
        for fn in $(sed -n 's/^[a-z][a-z0-9_ *]* \**\(p3d_[a-z0-9_]*\)(.*/\1/p' "$h"); do
            d=$(awk -v s="$fn" '$1 == s {print $3; exit}' "$defs")
            [ -z "$d" ] && continue # inline, or a test's
            [ "${d%%/*}" = "$l" ] ||
                fail "$l/$(basename "$h") declares $fn, defined in $d"
        done
    done
done

# The views: each family (one output format) includes its own headers,
# the views' shared ones and the layers below, never another family's.
family() { # family FILE-BASENAME: the family of a views/ file
    case $1 in
    p3d_report|p3d_coords|p3d_seedrow|p3d_report_find|p3d_hang_text) echo text ;;
    p3d_json|p3d_time_json|p3d_hang_json) echo json ;;
    p3d_html|p3d_html_bars|p3d_html_find|p3d_html_map|p3d_html_tl|p3d_html_parts|p3d_svg) echo html ;;
    p3d_chrome|p3d_chrome_flow|p3d_chrome_lane) echo chrome ;;
    p3d_compare) echo compare ;;
    p3d_dump) echo dump ;;
    # shared by every view: formatting, the seed table, the views' model
    p3d_vfmt|p3d_seedtab|p3d_vrank|p3d_vsel|p3d_vclock|p3d_html_sum|p3d_html_time) echo shared ;;
    *) echo unknown ;;
    esac
}
for f in "$A"/views/*.[ch]; do
    b=$(basename "$f"); b=${b%.?}; fam=$(family "$b")
    [ "$fam" = unknown ] && { fail "views/$b is in no family (test_layers.sh)"; continue; }
    for h in $(sed -n 's/^#include "\(p3d_[a-z0-9_]*\)\.h".*/\1/p' "$f"); do
        [ -f "$A/views/$h.h" ] || continue
        hf=$(family "$h")
        [ "$hf" = "$fam" ] || [ "$hf" = shared ] ||
            fail "views/$(basename "$f") ($fam) includes $h.h ($hf)"
    done
done

[ "$fails" -eq 0 ] && echo "layers: every include and call goes down ($layers); views include no other view"
[ "$fails" -eq 0 ]
