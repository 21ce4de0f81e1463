# Build rules of the shim's integration tests (included by the Makefile
# through tests/integration/*.mk).
#
#   $(BUILD)/fakes/shim_driver         opens a library RTLD_LOCAL, runs it
#   $(BUILD)/fakes/libshim_drv.so      scenarios; links the fake NCCL
#                                      and cudart (for real streams);
#                                      with drvlib.c, shared with rel.mk
#   $(BUILD)/fakes/libshim_missing.so  calls NCCL with no NCCL loaded

SHIM_DRV := $(BUILD)/fakes/shim_driver
SHIM_DRV_LIB := $(BUILD)/fakes/libshim_drv.so
SHIM_MISSING_LIB := $(BUILD)/fakes/libshim_missing.so
SHIM_TEST_CFLAGS = $(CPPFLAGS_ALL) $(P3D_CFLAGS)

$(SHIM_DRV): tests/integration/shim_driver.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(P3D_LDFLAGS) -ldl

$(SHIM_DRV_LIB): tests/integration/shim_drvlib.c $(DRVLIB_SRC) \
		$(BUILD)/fakes/libnccl.so.2
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -fPIC -shared -o $@ \
		$(filter %.c,$^) -L$(BUILD)/fakes -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS) -pthread

$(SHIM_MISSING_LIB): tests/integration/shim_missing.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -fPIC -shared -o $@ $< \
		$(P3D_LDFLAGS)

TEST_DEPS += $(SHIM_DRV) $(SHIM_DRV_LIB) $(SHIM_MISSING_LIB)

# Overhead benchmark (not part of the tests): make shim-bench, then
#   build/fakes/null/shim_bench; LD_PRELOAD=build/libp3dtrace.so ...
SHIM_BENCH := $(BUILD)/fakes/null/shim_bench

$(BUILD)/fakes/null/libnccl.so.2: tests/integration/shim_nullnccl.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -fPIC -shared \
		-Wl,-soname,libnccl.so.2 -o $@ $< $(P3D_LDFLAGS)

$(SHIM_BENCH): tests/integration/shim_bench.c $(BUILD)/fakes/null/libnccl.so.2
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< \
		-L$(BUILD)/fakes/null -l:libnccl.so.2 -Wl,-rpath,'$$ORIGIN' \
		$(P3D_LDFLAGS)

# test_shim_nocuda.sh: an NCCL program without the CUDA runtime
TEST_DEPS += $(SHIM_BENCH)

.PHONY: shim-bench
shim-bench: $(LIB) $(SHIM_BENCH)
