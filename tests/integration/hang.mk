# Build rules of the hang-diagnosis integration tests (issue 7), included
# by the Makefile through tests/integration/*.mk.
#
#   $(BUILD)/fakes/hang_sigdrv   one-rank NCCL program that SIGTERMs
#                                itself (test_hang_signals.sh)
#
# The full fault matrix (71 faults, under GPU timing auto, events and
# off: ~3 min on 2 cores) runs with
#   make hang-matrix
# `make test` runs a representative subset of it (test_hang_matrix.sh).

HANG_SIGDRV := $(BUILD)/fakes/hang_sigdrv

$(HANG_SIGDRV): tests/integration/hang_sigdrv.c $(BUILD)/fakes/libnccl.so.2
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -o $@ $< \
		-L$(BUILD)/fakes -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS)

TEST_DEPS += $(HANG_SIGDRV)

.PHONY: hang-matrix
hang-matrix: all $(TEST_DEPS)
	P3D_BUILD=$(abspath $(BUILD)) P3D_SRC=$(CURDIR) HANG_MATRIX=full \
		HANG_GPU_MODES="auto events off" \
		sh tests/integration/test_hang_matrix.sh

# LD_PRELOAD counter of trace-file opens (test_hang_fastpath.sh)
OPEN_COUNT := $(BUILD)/tests/libopen_count.so

$(OPEN_COUNT): tests/integration/open_count.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -fPIC -shared -o $@ $< \
		$(P3D_LDFLAGS) -ldl

TEST_DEPS += $(OPEN_COUNT)
