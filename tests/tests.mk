# Test doubles, simulator and helpers for integration tests.
# Included by the top-level Makefile; TEST_DEPS lists what integration
# tests need built.
#
#   $(BUILD)/fakes/libcudart.so.13   fake CUDA runtime (tests/fakes/)
#   $(BUILD)/fakes/libnccl.so.2      fake NCCL, links the fake cudart
#   $(BUILD)/fakes/p3dfake-selftest  checks the fakes (N processes)
#   $(BUILD)/fakes/libp3dsim_rank.so the simulator's rank work ("torch")
#   $(BUILD)/p3d-sim                 the job simulator (tests/sim/)

FAKES := $(BUILD)/fakes
FAKE_CFLAGS = $(CPPFLAGS_ALL) -Itests/fakes $(P3D_CFLAGS)
FAKE_CUDART := $(FAKES)/libcudart.so.13
FAKE_NCCL := $(FAKES)/libnccl.so.2
FAKE_SELFTEST := $(FAKES)/p3dfake-selftest
SIM_RANK_LIB := $(FAKES)/libp3dsim_rank.so
SIM := $(BUILD)/p3d-sim
SIM_RANK_SRC := $(sort $(wildcard tests/sim/rank_*.c)) tests/sim/sim_layout.c
SIM_DRV_SRC := $(sort $(wildcard tests/sim/sim_*.c))
SIM_HDR := $(wildcard tests/sim/*.h) tests/fakes/p3dfake.h

$(FAKE_CUDART): tests/fakes/fake_cudart.c tests/fakes/fake_stream.c \
		tests/fakes/fake_stream.h tests/fakes/p3dfake.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(FAKE_CFLAGS) -fPIC -shared \
		-Wl,-soname,libcudart.so.13 -o $@ tests/fakes/fake_cudart.c \
		tests/fakes/fake_stream.c $(P3D_LDFLAGS) -ldl -pthread

# The fake NCCL computes commHash with the shim's copy of NCCL's hash and
# speaks the profiler ABI of the shim's header (shim/ on the include path).
FAKE_NCCL_SRC := tests/fakes/fake_nccl.c tests/fakes/fake_profiler.c \
	shim/p3d_commhash.c
$(FAKE_NCCL): $(FAKE_NCCL_SRC) tests/fakes/p3dfake.h \
		tests/fakes/fake_profiler.h shim/p3d_nccl_profiler_abi.h \
		$(FAKE_CUDART)
	$(QUIET_LINK)$(CC) $(FAKE_CFLAGS) -Ishim -fPIC -shared \
		-Wl,-soname,libnccl.so.2 -o $@ $(FAKE_NCCL_SRC) -L$(FAKES) \
		-l:libcudart.so.13 -ldl \
		-Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS) -pthread

$(FAKE_SELFTEST): tests/fakes/fake_selftest.c $(FAKE_NCCL)
	$(QUIET_LINK)$(CC) $(FAKE_CFLAGS) -o $@ $< -L$(FAKES) \
		-l:libnccl.so.2 -l:libcudart.so.13 -Wl,-rpath,'$$ORIGIN' \
		$(P3D_LDFLAGS) -pthread

# Like libtorch_cuda.so, the rank library links NCCL, cudart and CUPTI
# (the GPU helper's fake, when present) dynamically.
comma := ,
SIM_CUPTI := $(if $(wildcard tests/fakes/fake_cupti.c),$(FAKES)/libcupti.so.13)
$(SIM_RANK_LIB): $(SIM_RANK_SRC) $(SIM_HDR) $(FAKE_NCCL) $(SIM_CUPTI)
	$(QUIET_LINK)$(CC) $(FAKE_CFLAGS) -Itests/sim -fPIC -shared \
		-o $@ $(SIM_RANK_SRC) -L$(FAKES) -l:libnccl.so.2 \
		-l:libcudart.so.13 $(if $(SIM_CUPTI),-Wl$(comma)--push-state$(comma)--no-as-needed \
		-l:libcupti.so.13 -Wl$(comma)--pop-state) \
		-Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS) -pthread

$(SIM): $(SIM_DRV_SRC) $(SIM_HDR)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(FAKE_CFLAGS) -Itests/sim -o $@ $(SIM_DRV_SRC) \
		$(P3D_LDFLAGS) -ldl -pthread

TEST_DEPS := $(FAKE_CUDART) $(FAKE_NCCL) $(FAKE_SELFTEST)
ifneq ($(wildcard tests/sim/rank_*.c),)
TEST_DEPS += $(SIM_RANK_LIB)
endif
ifneq ($(SIM_DRV_SRC),)
TEST_DEPS += $(SIM)
endif

.PHONY: fakes example
fakes: $(TEST_DEPS)

# What the scenario libraries of the shim and reliability tests
# (tests/integration/shim.mk, rel.mk) share.
DRVLIB_SRC := tests/integration/drvlib.c tests/integration/drvlib.h

# Other helpers add their own rules in tests/integration/*.mk.
-include tests/integration/*.mk

# make example: record the committed example again under today's shim
# (test_example_current.sh fails when its defaults changed since).
EXAMPLE := example-tp2pp2dp2
example: $(LIB) $(SIM) $(SIM_RANK_LIB)
	$(Q)rm -rf traces/$(EXAMPLE)
	$(Q)$(SIM) $(DEMO_ARGS) --out traces --job-id $(EXAMPLE) --shim $(LIB) \
		--quiet
	$(Q)echo "example: traces/$(EXAMPLE) recorded again"

# make demo: the simulated 8-rank TP=2 PP=2 DP=2 job (m=8) under the shim
# into traces/demo (replacing the previous demo), then the analyzer on it.
DEMO_DIR := traces/demo
DEMO_ARGS := --tp 2 --pp 2 --dp 2 -m 8 --iters 3
demo: $(LIB) $(SIM) $(SIM_RANK_LIB) $(if $(wildcard $(ANALYZER_MAIN)),$(ANALYZE))
	$(Q)$(SIM) $(DEMO_ARGS) --out traces --job-id demo \
		--shim $(abspath $(LIB))
	$(Q)if [ -x $(ANALYZE) ]; then $(ANALYZE) $(DEMO_DIR); else \
		echo "demo: $(ANALYZE) not built yet; traces are in $(DEMO_DIR)"; fi
