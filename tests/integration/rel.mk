# Reliability tools (issue 11): libFuzzer harness, sanitizer/checker runs.
# Included by tests/tests.mk.  Nothing here is in TEST_DEPS: the fuzzer
# needs clang's fuzzer runtime, which a machine may lack.
#
#   make fuzz-build       $(BUILD)/fuzz/fuzz_{reader,analyze} (clang,
#                         ASan+UBSan)
#   make fuzz FUZZ_S=30   a short fuzz run over tests/fuzz/corpus
#   make rel-check        ASan/UBSan, TSan, valgrind, short fuzz run
#                         (tests/integration/rel_check.sh)

FUZZ_CC ?= clang
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(FUZZ_DIR)/fuzz_reader $(FUZZ_DIR)/fuzz_analyze
FUZZ_S ?= 30
FUZZ_FLAGS := -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(ANALYZER_SRC) \
		$(ANALYZER_HDR) include/p3d_format.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(FUZZ_CC) $(CPPFLAGS_ALL) $(ANALYZER_INC) $(STD) $(FUZZ_FLAGS) \
		-pthread -o $@ $< $(ANALYZER_SRC) -lm

.PHONY: fuzz-build fuzz rel-check
fuzz-build: $(FUZZ_BIN)

fuzz:
	$(Q)P3D_BUILD=$(abspath $(BUILD)) FUZZ_S=$(FUZZ_S) sh tests/fuzz/run.sh

rel-check:
	$(Q)sh tests/integration/rel_check.sh

# Everything the integration tests need (TEST_DEPS is complete only once
# every *.mk is read, hence the recursive make).
.PHONY: rel-test-deps
rel-test-deps:
	$(Q)$(MAKE) --no-print-directory $(TEST_DEPS)

# Fault injection (tests/integration/test_rel_*.sh): rel_driver opens
# librel_drv.so (links the fake NCCL) with dlopen(RTLD_LOCAL).
REL_DRV := $(BUILD)/fakes/rel_driver
REL_DRV_LIB := $(BUILD)/fakes/librel_drv.so

$(REL_DRV): tests/integration/rel_driver.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -o $@ $< \
		$(P3D_LDFLAGS) -ldl

$(REL_DRV_LIB): tests/integration/rel_drvlib.c $(DRVLIB_SRC) \
		$(BUILD)/fakes/libnccl.so.2
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -fPIC -shared -o $@ \
		$(filter %.c,$^) -L$(BUILD)/fakes -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS) -pthread

TEST_DEPS += $(REL_DRV) $(REL_DRV_LIB)
