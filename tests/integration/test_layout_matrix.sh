#!/bin/sh
# A fixed sample of 40 runs of the layout matrix (tests/layout/matrix.py;
# `make layout-matrix` runs all of it): Megatron-LM's own rank groups (lazy
# and eager communicators), torch DeviceMesh's (torchtitan's traffic) and
# plain DDP / FSDP, with and without a command line.  Every communicator
# must be labelled as its group, or the report must say it cannot tell;
# a wrong layout or label stated as likely or certain fails.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
python3 "$P3D_SRC/tests/layout/matrix.py" --sample 40 --build "$P3D_BUILD"
