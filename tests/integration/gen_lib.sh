# gen_lib.sh - sourced by tests that write synthetic traces with p3d-gen
# (tests/gen/p3d_gen.c).  gen_find DIR sets G to $P3D_BUILD/tests/p3d-gen,
# or, when that is missing or older than its source, to DIR/p3d-gen built
# here (exits 1 if it does not compile).
# shellcheck shell=sh
gen_find() {
    G=$P3D_BUILD/tests/p3d-gen
    if [ ! -x "$G" ] || [ "$P3D_SRC/tests/gen/p3d_gen.c" -nt "$G" ]; then
        G=$1/p3d-gen
        ${CC:-cc} -std=gnu11 -O2 -I"$P3D_SRC/include" -o "$G" \
            "$P3D_SRC/tests/gen/p3d_gen.c" || exit 1
    fi
}
