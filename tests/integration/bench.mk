# Benchmarks (bench/, issue 10).  Not part of the tests: no timed
# assertions anywhere, each target prints plain figures.
#
#   make bench-shim      host ns the shim adds per NCCL / allocation call
#   make bench-probe     why writing records into a mapped file costs
#   make bench-volume    trace bytes per op and per second, shim memory
#   make bench-analyzer  p3d-analyze on 64/256/1024 synthetic ranks
#
# Options go through the environment of bench/*.sh (see each script).
BENCH := $(BUILD)/bench
BENCH_NULL := $(BENCH)/null
BENCH_CFLAGS = $(CPPFLAGS_ALL) $(P3D_CFLAGS)

$(BENCH_NULL)/libnccl.so.2: bench/null_nccl.c bench/null_nccl_comm.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -fPIC -shared \
		-Wl,-soname,libnccl.so.2 -o $@ $^ $(P3D_LDFLAGS)

$(BENCH_NULL)/libcudart.so.13: bench/null_cudart.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -fPIC -shared \
		-Wl,-soname,libcudart.so.13 -o $@ $< $(P3D_LDFLAGS)

$(BENCH_NULL)/shim_bench: bench/shim_bench.c $(BENCH_NULL)/libnccl.so.2 \
		$(BENCH_NULL)/libcudart.so.13
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -o $@ $< -L$(BENCH_NULL) \
		-Wl,--no-as-needed -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,--as-needed -Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS) -ldl

$(BENCH)/mmap_probe: bench/mmap_probe.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -o $@ $< $(P3D_LDFLAGS)

$(BENCH)/p3d-gen-bench: tests/gen/p3d_gen.c include/p3d_format.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -o $@ $<

.PHONY: bench bench-shim bench-icount bench-probe bench-volume bench-analyzer
bench-shim: $(LIB) $(BENCH_NULL)/shim_bench
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/shim.sh

bench-probe: $(BENCH)/mmap_probe
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/probe.sh

bench-volume: $(LIB) $(SIM) $(SIM_RANK_LIB) $(BENCH_NULL)/shim_bench
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/volume.sh

bench-analyzer: $(ANALYZE) $(BENCH)/p3d-gen-bench
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/analyzer.sh

bench: bench-shim bench-icount bench-probe bench-volume bench-analyzer

bench-icount: $(LIB) $(BENCH_NULL)/shim_bench
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/icount.sh

# Host cost per op of each P3D_GPU_TIMING setting, plugin included
# (bench/plugin_host_cost.sh): a null NCCL that drives the plugin.
BENCH_PLUGIN := $(BENCH)/plugin
$(BENCH_PLUGIN)/libnccl.so.2: bench/null_nccl_plugin.c bench/null_nccl_comm.c \
		shim/p3d_commhash.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -Ishim -fPIC -shared \
		-Wl,-soname,libnccl.so.2 -o $@ $^ $(P3D_LDFLAGS) -ldl

$(BENCH_PLUGIN)/libcudart.so.13: bench/null_cudart.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -fPIC -shared \
		-Wl,-soname,libcudart.so.13 -o $@ $< $(P3D_LDFLAGS)

$(BENCH_PLUGIN)/plugin_host_cost: bench/plugin_host_cost.c \
		$(BENCH_PLUGIN)/libnccl.so.2 $(BENCH_PLUGIN)/libcudart.so.13
	$(QUIET_LINK)$(CC) $(BENCH_CFLAGS) -o $@ $< -L$(BENCH_PLUGIN) \
		-Wl,--no-as-needed -l:libnccl.so.2 -l:libcudart.so.13 \
		-Wl,--as-needed -Wl,-rpath,'$$ORIGIN' $(P3D_LDFLAGS)

.PHONY: bench-plugin
bench-plugin: $(LIB) $(BENCH_PLUGIN)/plugin_host_cost
	$(Q)BUILD=$(abspath $(BUILD)) sh bench/plugin_host_cost.sh
