# GPU timeline / memory test doubles and driver (issue 4).  Included by
# tests/tests.mk.
#
#   $(BUILD)/fakes/libcupti.so.13   fake CUPTI (tests/fakes/fake_cupti.c)
#   $(BUILD)/fakes/libcuda.so.1     fake CUDA driver (fake_cuda_driver.c)
#   $(BUILD)/tests/gpu_driver       program run by test_gpu_*.sh

FAKE_CUPTI := $(BUILD)/fakes/libcupti.so.13
FAKE_CUDA_DRV := $(BUILD)/fakes/libcuda.so.1
GPU_DRIVER := $(BUILD)/tests/gpu_driver

$(FAKE_CUPTI): tests/fakes/fake_cupti.c tests/fakes/p3dfake.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) -Itests/fakes $(P3D_CFLAGS) -fPIC \
		-shared -Wl,-soname,libcupti.so.13 -o $@ $< $(P3D_LDFLAGS) \
		-ldl -pthread

$(FAKE_CUDA_DRV): tests/fakes/fake_cuda_driver.c
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -fPIC -shared \
		-Wl,-soname,libcuda.so.1 -o $@ $< $(P3D_LDFLAGS) -ldl

$(GPU_DRIVER): tests/integration/gpu_driver.c $(FAKE_CUDA_DRV) \
		$(BUILD)/fakes/libnccl.so.2 $(BUILD)/fakes/libcudart.so.13
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) -Itests/fakes $(P3D_CFLAGS) \
		-rdynamic -o $@ $< \
		-L$(BUILD)/fakes -l:libnccl.so.2 -l:libcudart.so.13 \
		-l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../fakes' $(P3D_LDFLAGS) \
		-pthread

TEST_DEPS += $(FAKE_CUPTI) $(FAKE_CUDA_DRV) $(GPU_DRIVER)
