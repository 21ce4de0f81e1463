# analyze_lib.sh - sourced by the analyzer's tests on generated traces
# (test_analyze_*.sh): A, the analyzer; T, a scratch directory removed at
# exit; G, the trace generator (gen_lib.sh); fail MSG.
# shellcheck shell=sh disable=SC2034  # A is for the tests that source this
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
A=$P3D_BUILD/p3d-analyze
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$P3D_SRC/tests/integration/gen_lib.sh"
gen_find "$T"
