/*
 * p3d_layout_parse.c - layouts stated by the user (--layout) or by the
 * job's own Megatron command line (recorded in P3D_REC_CMDLINE).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_infer.h"
#include "p3d_layout.h"
#include "p3d_util.h"

static int p3d_pos_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (end == s || *end || v < 1 || v > (1 << 24))
        return -1;
    *out = (int)v;
    return 0;
}

static int p3d_spec_item(const char *key, const char *val, int sz[7],
                         char *order, size_t order_n)
{
    static const char *const keys[] = {"tp", "cp", "dp", "pp", "ep", "etp",
                                       "dp_shard"};

    if (!strcmp(key, "order")) {
        snprintf(order, order_n, "%s", val);
        return 0;
    }
    for (int i = 0; i < 7; i++)
        if (!strcmp(key, keys[i]))
            return p3d_pos_int(val, &sz[i]);
    return -1;
}

int p3d_layout_parse(struct p3d_layout *l, const char *spec, int w)
{
    char buf[256], order[64] = "tp-cp-ep-dp-pp", *save = NULL, *tok;
    int sz[7] = {1, 1, 0, 1, 1, 0, 0}; /* etp 0: tp's; dp_shard 0: none */

    if (strlen(spec) >= sizeof(buf))
        return p3d_error("layout '%s' too long", spec);
    strcpy(buf, spec);
    for (tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return p3d_error("bad --layout item '%s' (want key=value)", tok);
        *eq = 0;
        if (p3d_spec_item(tok, eq + 1, sz, order, sizeof(order)))
            return p3d_error("bad --layout item '%s=%s'", tok, eq + 1);
    }
    if (!sz[2] && w > 0 && w % (sz[0] * sz[1] * sz[3]) == 0)
        sz[2] = w / (sz[0] * sz[1] * sz[3]);
    if (!sz[2] && w <= 0)
        sz[2] = 1; /* syntax check only */
    if (!sz[2] || (w > 0 && sz[0] * sz[1] * sz[2] * sz[3] != w))
        return p3d_error("layout '%s' does not fit a world of %d ranks",
                         spec, w);
    if (w <= 0 ? p3d_layout_set(l, sz[0], sz[1], sz[2], sz[3], 1, order)
               : p3d_layout_set_moe(l, sz[0], sz[1], sz[2], sz[3], sz[4],
                                    sz[5] ? sz[5] : sz[0], order))
        return p3d_error("bad layout '%s' (order, ep or etp: Megatron's "
                         "expert groups need etp x ep x pp to divide the "
                         "world and an order ending in pp unless the "
                         "expert and dense DP sizes agree)", spec);
    l->dp_shard = sz[6];
    if (sz[6] && (sz[6] >= sz[2] || sz[2] % sz[6] ||
                  (l->ep > 1 && w > 0 && p3d_layout_efsdp(l) < 1)))
        return p3d_error("bad layout '%s' (dp_shard, torchtitan's HSDP: "
                         "it must divide dp, be smaller, and with ep the "
                         "replicas must divide the experts' DP)", spec);
    l->source = "user";
    return 0;
}

/* Value of a flag in argv: "--flag N" or "--flag=N"; NULL if absent. */
static const char *p3d_flag(const char *argv, size_t len, const char *flag,
                            int *present)
{
    size_t fl = strlen(flag);

    for (const char *a = argv; a < argv + len; a += strlen(a) + 1) {
        if (strncmp(a, flag, fl))
            continue;
        if (a[fl] == '=') {
            *present = 1;
            return a + fl + 1;
        }
        if (a[fl] == 0) {
            const char *next = a + fl + 1;
            *present = 1;
            return next < argv + len ? next : "";
        }
    }
    return NULL;
}

static int p3d_flag_int(const char *argv, size_t len, const char *flag,
                        int dflt, int *found)
{
    int present = 0, v;
    const char *s = p3d_flag(argv, len, flag, &present);

    if (!s || p3d_pos_int(s, &v))
        return dflt;
    *found = 1;
    return v;
}

int p3d_layout_from_cmdline(struct p3d_layout *l, const char *argv,
                            size_t len, int w)
{
    int found = 0, mapping = 0, dummy = 0, tp, pp, cp, ep, etp, dp;

    memset(l, 0, sizeof(*l));
    if (!argv)
        return 0;
    tp = p3d_flag_int(argv, len, "--tensor-model-parallel-size", 1, &found);
    pp = p3d_flag_int(argv, len, "--pipeline-model-parallel-size", 1,
                      &found);
    cp = p3d_flag_int(argv, len, "--context-parallel-size", 1, &found);
    ep = p3d_flag_int(argv, len, "--expert-model-parallel-size", 1, &found);
    /* Megatron's default (arguments.py): the experts split as TP */
    etp = p3d_flag_int(argv, len, "--expert-tensor-parallel-size", tp,
                       &found);
    p3d_flag(argv, len, "--use-tp-pp-dp-mapping", &mapping);
    if (!found || w <= 0 || w % (tp * pp * cp))
        return 0;
    dp = w / (tp * pp * cp);
    if (p3d_layout_set_moe(l, tp, cp, dp, pp, ep, etp,
                           mapping ? "tp-cp-ep-pp-dp" : "tp-cp-ep-dp-pp"))
        return 0;
    l->vpp = p3d_flag_int(argv, len,
                          "--num-layers-per-virtual-pipeline-stage", 0,
                          &dummy);
    l->mbs = p3d_flag_int(argv, len, "--micro-batch-size", 0, &dummy);
    l->gbs = p3d_flag_int(argv, len, "--global-batch-size", 0, &dummy);
    l->seq = p3d_flag_int(argv, len, "--seq-length", 0, &dummy);
    l->source = "cmdline";
    return 1;
}
