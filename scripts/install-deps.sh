#!/bin/sh
# Installs the Debian packages p3dtrace needs to build and test, if missing
# (OpenMPI for p3d-analyze-mpi, `make mpi`, and its equivalence tests).
# Safe to run repeatedly: it only calls apt-get when something is absent.
# chromium is optional: the HTML report test (tests/integration/
# test_views_html.sh) renders the report in it headless and is skipped
# without it.  P3D_NO_CHROMIUM=1 leaves it out; if it cannot be
# installed, a warning is printed and the rest still counts.
set -eu
need=""
for pkg in build-essential libcmocka-dev libunwind-dev pkg-config python3 \
           libopenmpi-dev openmpi-bin; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need="$need $pkg"
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
updated=0
if [ -n "$need" ]; then
    echo "p3dtrace: installing:$need"
    $SUDO apt-get update -qq
    updated=1
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $need >/dev/null
fi
if [ "${P3D_NO_CHROMIUM:-0}" != 1 ] && ! dpkg -s chromium >/dev/null 2>&1; then
    echo "p3dtrace: installing chromium (for the HTML report test)"
    [ "$updated" = 1 ] || $SUDO apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium \
        >/dev/null ||
        echo "p3dtrace: warning: chromium not installed; the HTML report" \
             "test will be skipped" >&2
fi
