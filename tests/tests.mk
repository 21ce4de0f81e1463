# Test doubles, simulator and helpers for integration tests.
# Included by the top-level Makefile; TEST_DEPS lists what integration
# tests need built.
TEST_DEPS :=
