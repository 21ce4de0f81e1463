# The layout matrix (issue 21), included by the Makefile through
# tests/integration/*.mk: p3d-analyze's layout and labels on Megatron-LM's
# and torch DeviceMesh's own rank groups (tests/data/layout), every
# configuration under six usage profiles, with and without a command
# line (tests/layout/matrix.py; ~3,300 runs of real processes under the
# shim on the fake NCCL, LAYOUT_JOBS at once):
#   make layout-matrix [LAYOUT_JOBS=N]
# `make test` runs a fixed sample of 40 of them (test_layout_matrix.sh).
LAYOUT_JOBS ?= 2

.PHONY: layout-matrix
layout-matrix: all $(TEST_DEPS)
	P3D_BUILD=$(abspath $(BUILD)) python3 tests/layout/matrix.py \
		--jobs $(LAYOUT_JOBS)
