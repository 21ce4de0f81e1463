# p3dtrace build.
#
# Final flags are composed from what p3dtrace needs plus the user's CFLAGS
# and LDFLAGS, which are appended, never replaced:
#   P3D_CFLAGS = $(STD) $(WARN) $(OPT) $(CFLAGS) $(EXTRA_CFLAGS)
#
# Targets:
#   all (default)  build/libp3dtrace.so and build/p3d-analyze
#   test           build everything and run unit + integration tests
#   install        PREFIX=/usr/local: $PREFIX/lib, $PREFIX/bin
#   asan           unit + integration tests under ASan+UBSan (build-asan/;
#                  tests/integration/rel_check.sh, which also has tsan,
#                  valgrind and fuzz steps)
#   demo           simulated 8-rank TP=2 PP=2 DP=2 job under the shim
#   clean
#
# The shim is linked with -z defs and without libnccl/libcudart/libcupti:
# it finds the real NCCL and CUDA inside the traced process at run time.

CUDA_HOME ?= /usr/local/cuda
PREFIX ?= /usr/local
BUILD ?= build
CC ?= cc

STD := -std=gnu11
WARN := -Wall -Wextra -Wno-missing-field-initializers -Wstrict-prototypes \
	-Wshadow -Wpointer-arith
OPT ?= -O2 -g
CPPFLAGS_ALL := -Iinclude -I$(CUDA_HOME)/include -D_GNU_SOURCE
P3D_CFLAGS = $(STD) $(WARN) $(OPT) $(CFLAGS) $(EXTRA_CFLAGS)
P3D_LDFLAGS = $(LDFLAGS) $(EXTRA_LDFLAGS)

ifndef V
Q := @
QUIET_CC = @printf '    CC      %s\n' $@;
QUIET_LINK = @printf '    LINK    %s\n' $@;
endif

SHIM_SRC := $(sort $(wildcard shim/*.c))
SHIM_OBJ := $(SHIM_SRC:%.c=$(BUILD)/%.o)
ANALYZER_MAIN := analyzer/p3d_main.c
# The analyzer's layers, bottom to top (docs/architecture.md): a folder's
# files include only from its own folder and the ones before it
# (tests/integration/test_layers.sh checks this).
ANALYZER_DIRS := util read model layout match time hang findings analyse views
ANALYZER_INC := $(addprefix -Ianalyzer/,$(ANALYZER_DIRS))
ANALYZER_SRC := $(sort $(wildcard $(addsuffix /*.c,$(addprefix analyzer/,$(ANALYZER_DIRS)))))
ANALYZER_HDR := $(wildcard $(addsuffix /*.h,$(addprefix analyzer/,$(ANALYZER_DIRS))))
ANALYZER_OBJ := $(ANALYZER_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

LIB := $(BUILD)/libp3dtrace.so
SHIM_AR := $(BUILD)/libp3dshim.a
ANALYZER_AR := $(BUILD)/libp3danalyze.a
ANALYZE := $(BUILD)/p3d-analyze

.PHONY: all test unit integration install clean asan demo check
all: $(LIB) $(ANALYZE)

$(BUILD)/shim/%.o: shim/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CPPFLAGS_ALL) -Ishim $(P3D_CFLAGS) -fPIC \
		-fvisibility=hidden -pthread -MMD -MP -c $< -o $@

$(BUILD)/analyzer/%.o: analyzer/%.c
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CPPFLAGS_ALL) $(ANALYZER_INC) $(P3D_CFLAGS) -pthread \
		-MMD -MP -c $< -o $@

$(LIB): $(SHIM_OBJ)
	$(QUIET_LINK)$(CC) -shared -Wl,-z,defs -Wl,-soname,libp3dtrace.so \
		$(P3D_CFLAGS) -o $@ $^ $(P3D_LDFLAGS) -ldl -pthread -lrt

$(SHIM_AR): $(SHIM_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(ANALYZER_AR): $(ANALYZER_OBJ)
	$(Q)rm -f $@ && ar rcs $@ $^

$(ANALYZE): $(BUILD)/analyzer/p3d_main.o $(ANALYZER_AR)
	$(QUIET_LINK)$(CC) $(P3D_CFLAGS) -o $@ $^ $(P3D_LDFLAGS) -pthread -lm

# p3d-analyze-mpi (issue 23): the same command line on MPI processes,
# built by `make mpi` where an MPI compiler wrapper is found (Debian:
# libopenmpi-dev, openmpi-bin; scripts/install-deps.sh installs them).
MPICC ?= $(shell command -v mpicc 2>/dev/null)
ANALYZE_MPI := $(BUILD)/p3d-analyze-mpi
.PHONY: mpi
mpi: $(ANALYZE_MPI)
$(BUILD)/mpi/p3d_main_cli.o: $(ANALYZER_MAIN)
	@mkdir -p $(dir $@)
	$(QUIET_CC)$(CC) $(CPPFLAGS_ALL) $(ANALYZER_INC) $(P3D_CFLAGS) -pthread \
		-Dmain=p3d_cli_main -MMD -MP -c $< -o $@
$(ANALYZE_MPI): analyzer/mpi/p3d_mpi.c $(BUILD)/mpi/p3d_main_cli.o \
		$(ANALYZER_AR)
	@test -n "$(MPICC)" || { echo "make mpi: no mpicc (apt-get install \
		libopenmpi-dev openmpi-bin)"; exit 1; }
	$(QUIET_LINK)$(MPICC) $(CPPFLAGS_ALL) $(ANALYZER_INC) $(P3D_CFLAGS) \
		-o $@ $^ $(P3D_LDFLAGS) -pthread -lm

# Unit tests: one cmocka program per module, linked against both archives
# (only the objects a test references are pulled in).
$(BUILD)/tests/test_%: tests/unit/test_%.c $(SHIM_AR) $(ANALYZER_AR)
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) -Ishim $(ANALYZER_INC) -Itests/unit \
		$(P3D_CFLAGS) -o $@ $< $(SHIM_AR) $(ANALYZER_AR) \
		$(P3D_LDFLAGS) -lcmocka -ldl -pthread -lrt -lm

# Test doubles, simulator and integration tests live in tests/tests.mk.
-include tests/tests.mk
# Where mpicc is found, the integration tests also check p3d-analyze-mpi.
TEST_DEPS += $(if $(MPICC),$(ANALYZE_MPI))

unit: $(UNIT_BIN)
	$(Q)set -e; for t in $(UNIT_BIN); do \
		echo "== $$t"; $$t; done

integration: all $(TEST_DEPS)
	$(Q)P3D_BUILD=$(abspath $(BUILD)) sh tests/integration/run-all.sh

test: all unit integration

check: test

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libp3dtrace.so
	install -m 0755 $(ANALYZE) $(DESTDIR)$(PREFIX)/bin/p3d-analyze
	@if [ -f scripts/p3d-run ]; then \
		sed 's|@P3D_LIB@|$(PREFIX)/lib/libp3dtrace.so|' scripts/p3d-run \
		> $(DESTDIR)$(PREFIX)/bin/p3d-run && \
		chmod 0755 $(DESTDIR)$(PREFIX)/bin/p3d-run; fi

asan: all
	sh tests/integration/rel_check.sh asan

clean:
	rm -rf $(BUILD) build-asan

-include $(SHIM_OBJ:.o=.d) $(ANALYZER_OBJ:.o=.d) $(BUILD)/analyzer/p3d_main.d \
	$(BUILD)/mpi/p3d_main_cli.d
