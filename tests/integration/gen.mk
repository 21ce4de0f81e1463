# Synthetic trace generator for the analyzer tests (tests/gen/p3d_gen.c).
# Included by the test makefile (tests/integration/*.mk); the analyzer's
# integration tests also build it themselves when it is missing.
P3D_GEN := $(BUILD)/tests/p3d-gen

$(P3D_GEN): tests/gen/p3d_gen.c include/p3d_format.h
	@mkdir -p $(dir $@)
	$(QUIET_LINK)$(CC) $(CPPFLAGS_ALL) $(P3D_CFLAGS) -o $@ $<

TEST_DEPS += $(P3D_GEN)
