# Build rules of the shim's integration tests (included by the Makefile
# through tests/integration/*.mk).
#
#   $(BUILD)/fakes/shim_driver         opens a library RTLD_LOCAL, runs it
#   $(BUILD)/fakes/libshim_drv.so      scenarios; links the fake NCCL
#   $(BUILD)/fakes/libshim_missing.so  calls NCCL with no NCCL loaded

SHIM_DRV := $(BUILD)/fakes/shim_driver
SHIM_DRV_LIB := $(BUILD)/fakes/libshim_drv.so
SHIM_MISSING_LIB := $(BUILD)/fakes/libshim_missing.so
SHIM_TEST_CFLAGS = $(CPPFLAGS_ALL) $(P3D_CFLAGS)

$(SHIM_DRV): tests/integration/shim_driver.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(P3D_LDFLAGS) -ldl

$(SHIM_DRV_LIB): tests/integration/shim_drvlib.c $(BUILD)/fakes/libnccl.so.2
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -fPIC -shared -o $@ $< \
		-L$(BUILD)/fakes -l:libnccl.so.2 -Wl,-rpath,'$$ORIGIN' \
		$(P3D_LDFLAGS) -pthread

$(SHIM_MISSING_LIB): tests/integration/shim_missing.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(SHIM_TEST_CFLAGS) -fPIC -shared -o $@ $< \
		$(P3D_LDFLAGS)

TEST_DEPS += $(SHIM_DRV) $(SHIM_DRV_LIB) $(SHIM_MISSING_LIB)
