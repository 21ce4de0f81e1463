/*
 * test_shim_env.c - environment parsing of the shim: strict numbers,
 * rank/world source order, and the job sub-folder rules every rank of a
 * job must agree on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "p3d_shim.h"

static const char *const job_vars[] = {
    "P3D_JOB_ID", "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR",
    "MASTER_PORT", "P3D_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
    "SLURM_PROCID", "P3D_WORLD_SIZE", "WORLD_SIZE", "LOCAL_RANK",
    "P3D_DISABLE", "P3D_TRACE_DIR", "P3D_MAX_MB", NULL};

static int clear_env(void **state)
{
    int i;

    (void)state;
    for (i = 0; job_vars[i] != NULL; i++)
        unsetenv(job_vars[i]);
    return 0;
}

static void test_shim_env_parse_int_strict(void **state)
{
    int v = 42;

    (void)state;
    assert_int_equal(p3d_env_parse_int("17", &v), 0);
    assert_int_equal(v, 17);
    assert_int_equal(p3d_env_parse_int("-3", &v), 0);
    assert_int_equal(v, -3);
    v = 42;
    assert_int_equal(p3d_env_parse_int("", &v), -1);
    assert_int_equal(p3d_env_parse_int(NULL, &v), -1);
    assert_int_equal(p3d_env_parse_int("3x", &v), -1);
    assert_int_equal(p3d_env_parse_int("x3", &v), -1);
    assert_int_equal(p3d_env_parse_int("1 ", &v), -1);
    assert_int_equal(p3d_env_parse_int("99999999999", &v), -1);
    assert_int_equal(v, 42);
}

static void test_shim_env_rank_order(void **state)
{
    struct p3d_cfg cfg;

    (void)state;
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.rank, -1);
    assert_int_equal(cfg.world_size, -1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("PMI_RANK", "4", 1);
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.rank, 4);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("RANK", "2", 1);
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.rank, 2);
    setenv("P3D_RANK", "bogus", 1); /* malformed: next source wins */
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.rank, 2);
    setenv("P3D_RANK", "1", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_RANK", "0", 1);
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.rank, 1);
    assert_int_equal(cfg.world_size, 8);
    assert_int_equal(cfg.local_rank, 0);
}

static void test_shim_env_job_id_rules(void **state)
{
    char buf[64], want[64];

    (void)state;
    p3d_env_job_id(buf, sizeof(buf));
    snprintf(want, sizeof(want), "pid-%ld", (long)getpid());
    assert_string_equal(buf, want);
    setenv("MASTER_ADDR", "node/1:x", 1);
    setenv("MASTER_PORT", "29500", 1);
    p3d_env_job_id(buf, sizeof(buf));
    assert_string_equal(buf, "node_1_x-29500");
    setenv("TORCHELASTIC_RUN_ID", "none", 1); /* torchrun's constant */
    p3d_env_job_id(buf, sizeof(buf));
    assert_string_equal(buf, "node_1_x-29500");
    setenv("TORCHELASTIC_RUN_ID", "abc", 1);
    p3d_env_job_id(buf, sizeof(buf));
    assert_string_equal(buf, "run-abc");
    setenv("SLURM_JOB_ID", "1234", 1);
    p3d_env_job_id(buf, sizeof(buf));
    assert_string_equal(buf, "slurm-1234");
    setenv("P3D_JOB_ID", "../mine", 1);
    p3d_env_job_id(buf, sizeof(buf));
    assert_string_equal(buf, "_._mine"); /* no escape from the dir */
}

static void test_shim_env_cfg_defaults(void **state)
{
    struct p3d_cfg cfg;

    (void)state;
    p3d_cfg_load(&cfg);
    assert_string_equal(cfg.dir, "traces");
    assert_int_equal(cfg.disabled, 0);
    assert_int_equal(cfg.max_bytes, 0);
    setenv("P3D_DISABLE", "1", 1);
    setenv("P3D_TRACE_DIR", "/tmp/x", 1);
    setenv("P3D_MAX_MB", "3", 1);
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.disabled, 1);
    assert_string_equal(cfg.dir, "/tmp/x");
    assert_int_equal(cfg.max_bytes, 3u << 20);
    setenv("P3D_DISABLE", "0", 1);
    p3d_cfg_load(&cfg);
    assert_int_equal(cfg.disabled, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shim_env_parse_int_strict),
        cmocka_unit_test_setup(test_shim_env_rank_order, clear_env),
        cmocka_unit_test_setup(test_shim_env_job_id_rules, clear_env),
        cmocka_unit_test_setup(test_shim_env_cfg_defaults, clear_env),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
