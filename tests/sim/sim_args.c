/*
 * sim_args.c - command line of p3d-sim.
 *
 * Parsed identically by the driver and by each rank (the driver re-runs
 * itself with the same argv), so every process holds the same config.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

static const char sim_usage[] =
"usage: p3d-sim [options]\n"
"layout:  --tp N --pp N --dp N --cp N\n"
"         --order tp-cp-ep-dp-pp|tp-cp-ep-pp-dp|titan (or any permutation)\n"
"         --hosts H (ranks split evenly over H simulated hosts)\n"
"schedule: -m/--micro-batches M --vpp V --iters N --layers L (per stage)\n"
"         --fwd-ms A[,B..] --bwd-ms A[,B..] (per stage and micro-batch)\n"
"         --opt-ms X --sequence-parallel --no-dist-opt --buckets N\n"
"         --ep N (MoE: all-to-all per layer on EP, expert grads on EP-DP)\n"
"         --etp N (--expert-tensor-parallel-size: the expert generator's\n"
"         tp; default tp)\n"
"bytes:   --tp-bytes --pp-bytes --cp-bytes --dp-bytes --emb-bytes (K/M ok)\n"
"faults:  --straggler R:PCT --hang R:GROUP:N --kill R:N --skew R:NS\n"
"         --mismatch R:GROUP:N[:op|:dtype|:kind] (count+1; :op another\n"
"         reduction; :dtype fp16<->bf16, fp32<->int32; :kind AllReduce<->\n"
"         Broadcast, ReduceScatter<->AllGather, else count+1; at most\n"
"         twice);\n"
"         GROUP: world dp cp mp tp pp emb distopt\n"
"         ep epdp;\n"
"         N counts ops from 1: the N-th op is never issued / is wrong)\n"
"run:     --out DIR --job-id ID --shim PATH/libp3dtrace.so --timeout S\n"
"         --grace S --comm-names --async --quiet --stop-when-hung[=KILL]\n"
"         --framework megatron|ddp|fsdp|titan|deepspeed (ddp, fsdp: PyTorch\n"
"         on the world group, --dp only; titan: torchtitan's DeviceMesh\n"
"         jobs; deepspeed: Megatron-DeepSpeed TP + ZeRO-2, --tp --dp)\n"
"         --dp-replicate R (titan: HSDP, dp = R replicas x dp/R shards)\n"
"         --eager-groups FILE (every group of FILE, one 'NAME r0 r1 ..'\n"
"         a line, split from WORLD at start, as torch with device_id)\n"
"         -- ARGS: the job's own command line, ignored (the shim records\n"
"         it: Megatron flags there are what p3d-analyze reads)\n";

static uint64_t sim_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    if (*end == 'k' || *end == 'K')
        v *= 1024;
    else if (*end == 'm' || *end == 'M')
        v *= 1024 * 1024;
    return (uint64_t)v;
}

static void sim_ms_list(const char *s, double *out)
{
    char *end;
    int i = 0;
    double last = strtod(s, &end);

    out[i++] = last;
    while (*end == ',' && i < SIM_MAX_STAGES) {
        last = strtod(end + 1, &end);
        out[i++] = last;
    }
    for (; i < SIM_MAX_STAGES; i++)
        out[i] = last;
}

static int sim_fault2(const char *s, int *r, long *n)
{
    return sscanf(s, "%d:%ld", r, n) == 2 ? 0 : -1;
}

static int sim_fault3(const char *s, int *r, int *g, long *n)
{
    char grp[32];

    if (sscanf(s, "%d:%31[^:]:%ld", r, grp, n) != 3)
        return -1;
    *g = sim_grp_parse(grp);
    return *g < 0 || *n < 1 ? -1 : 0;
}

static void sim_defaults(struct sim_cfg *c)
{
    memset(c, 0, sizeof(*c));
    for (int a = 0; a < SA_COUNT; a++)
        c->size[a] = 1;
    snprintf(c->order_str, sizeof(c->order_str), "tp-cp-ep-dp-pp");
    c->m = 8;
    c->vpp = 1;
    c->iters = 3;
    c->layers = 2;
    sim_ms_list("2", c->fwd_ms);
    sim_ms_list("4", c->bwd_ms);
    c->opt_ms = 1;
    c->tp_bytes = 64 << 10;
    c->pp_bytes = 64 << 10;
    c->cp_bytes = 32 << 10;
    c->dp_bytes = 1 << 20;
    c->emb_bytes = 256 << 10;
    c->buckets = 2;
    c->dist_opt = 1;
    c->ep = 1;
    c->straggler_rank = c->hang_rank = c->kill_rank = -1;
    c->mm[0].rank = c->mm[1].rank = -1;
    snprintf(c->out, sizeof(c->out), "traces");
    c->timeout_s = 60;
    c->grace_s = 1;
}

enum { O_TP = 256, O_PP, O_DP, O_CP, O_EP, O_ETP, O_ORDER, O_VPP, O_ITERS,
       O_LAYERS,
       O_FWD, O_BWD, O_OPT, O_TPB, O_PPB, O_CPB, O_DPB, O_EMBB, O_BUCKETS,
       O_SP, O_NODO, O_NAMES, O_HOSTS, O_STRAG, O_HANG, O_KILL, O_SKEW,
       O_MISM, O_SHIM, O_OUT, O_JOB, O_TIMEOUT, O_GRACE, O_QUIET,
       O_ASYNC, O_STOPHUNG, O_FW, O_EAGER, O_DPREP };

static const struct option sim_opts[] = {
    { "tp", 1, 0, O_TP }, { "pp", 1, 0, O_PP }, { "dp", 1, 0, O_DP },
    { "cp", 1, 0, O_CP }, { "ep", 1, 0, O_EP }, { "etp", 1, 0, O_ETP },
    { "order", 1, 0, O_ORDER },
    { "micro-batches", 1, 0, 'm' }, { "vpp", 1, 0, O_VPP },
    { "iters", 1, 0, O_ITERS }, { "layers", 1, 0, O_LAYERS },
    { "fwd-ms", 1, 0, O_FWD }, { "bwd-ms", 1, 0, O_BWD },
    { "opt-ms", 1, 0, O_OPT }, { "tp-bytes", 1, 0, O_TPB },
    { "pp-bytes", 1, 0, O_PPB }, { "cp-bytes", 1, 0, O_CPB },
    { "dp-bytes", 1, 0, O_DPB }, { "emb-bytes", 1, 0, O_EMBB },
    { "buckets", 1, 0, O_BUCKETS }, { "sequence-parallel", 0, 0, O_SP },
    { "no-dist-opt", 0, 0, O_NODO }, { "comm-names", 0, 0, O_NAMES },
    { "hosts", 1, 0, O_HOSTS }, { "straggler", 1, 0, O_STRAG },
    { "hang", 1, 0, O_HANG }, { "kill", 1, 0, O_KILL },
    { "skew", 1, 0, O_SKEW }, { "mismatch", 1, 0, O_MISM },
    { "shim", 1, 0, O_SHIM }, { "out", 1, 0, O_OUT },
    { "job-id", 1, 0, O_JOB }, { "timeout", 1, 0, O_TIMEOUT },
    { "grace", 1, 0, O_GRACE }, { "quiet", 0, 0, O_QUIET },
    { "async", 0, 0, O_ASYNC }, { "stop-when-hung", 2, 0, O_STOPHUNG },
    { "framework", 1, 0, O_FW }, { "eager-groups", 1, 0, O_EAGER },
    { "dp-replicate", 1, 0, O_DPREP },
    { "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
};

static int sim_opt(struct sim_cfg *c, int o, const char *a)
{
    struct sim_mm *mm;

    switch (o) {
    case O_TP: c->size[SA_TP] = atoi(a); break;
    case O_PP: c->size[SA_PP] = atoi(a); break;
    case O_DP: c->size[SA_DP] = atoi(a); break;
    case O_CP: c->size[SA_CP] = atoi(a); break;
    case O_EP: c->ep = atoi(a); break;
    case O_ETP: c->etp = atoi(a); break;
    case O_ORDER: snprintf(c->order_str, sizeof(c->order_str), "%s", a);
        break;
    case 'm': c->m = atoi(a); break;
    case O_VPP: c->vpp = atoi(a); break;
    case O_ITERS: c->iters = atoi(a); break;
    case O_LAYERS: c->layers = atoi(a); break;
    case O_FWD: sim_ms_list(a, c->fwd_ms); break;
    case O_BWD: sim_ms_list(a, c->bwd_ms); break;
    case O_OPT: c->opt_ms = atof(a); break;
    case O_TPB: c->tp_bytes = sim_bytes(a); break;
    case O_PPB: c->pp_bytes = sim_bytes(a); break;
    case O_CPB: c->cp_bytes = sim_bytes(a); break;
    case O_DPB: c->dp_bytes = sim_bytes(a); break;
    case O_EMBB: c->emb_bytes = sim_bytes(a); break;
    case O_BUCKETS: c->buckets = atoi(a); break;
    case O_SP: c->sp = 1; break;
    case O_NODO: c->dist_opt = 0; break;
    case O_NAMES: c->comm_names = 1; break;
    case O_HOSTS: c->hosts = atoi(a); break;
    case O_STRAG:
        return sscanf(a, "%d:%lf", &c->straggler_rank, &c->straggler_pct) == 2
                   ? 0 : -1;
    case O_HANG: return sim_fault3(a, &c->hang_rank, &c->hang_grp, &c->hang_n);
    case O_KILL: return sim_fault2(a, &c->kill_rank, &c->kill_n);
    case O_MISM:
        if (c->n_mm == 2)
            return -1;
        mm = &c->mm[c->n_mm++];
        mm->what = strstr(a, ":op") ? SIM_MM_REDOP
                   : strstr(a, ":dtype") ? SIM_MM_DTYPE
                   : strstr(a, ":kind") ? SIM_MM_KIND : SIM_MM_COUNT;
        return sim_fault3(a, &mm->rank, &mm->grp, &mm->n);
    case O_SKEW:
        if (c->n_skew == SIM_MAX_SKEW ||
            sscanf(a, "%d:%lld", &c->skew[c->n_skew].rank,
                   &c->skew[c->n_skew].ns) != 2)
            return -1;
        c->n_skew++;
        break;
    case O_SHIM: snprintf(c->shim, sizeof(c->shim), "%s", a); break;
    case O_OUT: snprintf(c->out, sizeof(c->out), "%s", a); break;
    case O_JOB: snprintf(c->job_id, sizeof(c->job_id), "%s", a); break;
    case O_TIMEOUT: c->timeout_s = atof(a); break;
    case O_GRACE: c->grace_s = atof(a); break;
    case O_STOPHUNG:
        if (a && strcmp(a, "KILL") != 0)
            return -1;
        c->stop_when_hung = a ? 2 : 1;
        break;
    case O_QUIET: c->quiet = 1; break;
    case O_DPREP: c->dp_rep = atoi(a); break;
    case O_EAGER:
        snprintf(c->eager_groups, sizeof(c->eager_groups), "%s", a);
        break;
    case O_ASYNC: c->async = 1; break;
    case O_FW:
        if (!strcmp(a, "megatron"))
            c->framework = SIM_FW_MEGATRON;
        else if (!strcmp(a, "ddp"))
            c->framework = SIM_FW_DDP;
        else if (!strcmp(a, "fsdp"))
            c->framework = SIM_FW_FSDP;
        else if (!strcmp(a, "titan"))
            c->framework = SIM_FW_TITAN;
        else if (!strcmp(a, "deepspeed"))
            c->framework = SIM_FW_DEEPSPEED;
        else
            return -1;
        break;
    default: return -1;
    }
    return 0;
}

/* Megatron: etp * ep * pp divides the world (with etp = tp: ep divides
 * dp * cp); order ends in pp unless PP = 1 or EDP = DP. */
static int sim_check_ep(const struct sim_cfg *c)
{
    int edp, n = (int)strlen(c->order_str), etp = sim_etp(c);

    if (c->etp < 0 || (c->etp > 0 && c->ep < 2)) {
        fprintf(stderr, "p3d-sim: error: --etp needs --ep > 1\n");
        return -1;
    }
    if (c->ep < 1 || c->world % (etp * c->ep * c->size[SA_PP])) {
        fprintf(stderr, "p3d-sim: error: --ep must divide dp * cp "
                "(with --etp: etp * ep * pp must divide the world)\n");
        return -1;
    }
    edp = c->world / (etp * c->ep * c->size[SA_PP]);
    if (c->ep > 1 && c->size[SA_PP] > 1 && edp != c->size[SA_DP] &&
        (n < 2 || strcmp(c->order_str + n - 2, "pp") != 0) &&
        strcmp(c->order_str, "titan") != 0) {
        fprintf(stderr, "p3d-sim: error: with --ep the order must end in "
                        "pp (Megatron)\n");
        return -1;
    }
    return 0;
}

/*
 * torchtitan: EP borrows from dp_shard x cp x tp (parallel_dims.py
 * _validate: ep divides it), and its experts have no tensor parallelism
 * of their own (the sparse mesh is pp, dp_replicate, efsdp, ep:
 * Megatron's expert grid with etp 1).  pytorch/torchtitan b5bcd76c.
 */
static int sim_check_titan_ep(struct sim_cfg *c)
{
    int rep = c->dp_rep > 1 ? c->dp_rep : 1;

    if (c->framework != SIM_FW_TITAN || c->ep < 2)
        return 0;
    if (c->etp > 1 ||
        (c->size[SA_DP] / rep * c->size[SA_CP] * c->size[SA_TP]) % c->ep) {
        fprintf(stderr, "p3d-sim: error: torchtitan's --ep must divide "
                "dp_shard * cp * tp (no --etp)\n");
        return -1;
    }
    c->etp = 1;
    return 0;
}

static int sim_check(struct sim_cfg *c)
{
    c->world = 1;
    for (int a = 0; a < SA_COUNT; a++) {
        if (c->size[a] < 1)
            return -1;
        c->world *= c->size[a];
    }
    if (sim_check_titan_ep(c) != 0 || sim_check_ep(c) != 0)
        return -1;
    if ((c->framework == SIM_FW_DDP || c->framework == SIM_FW_FSDP) &&
        (c->world != c->size[SA_DP] || c->ep > 1)) {
        fprintf(stderr, "p3d-sim: error: --framework ddp|fsdp is data "
                "parallel only: give --dp alone\n");
        return -1;
    }
    if (c->dp_rep > 1 && (c->framework != SIM_FW_TITAN ||
                          c->size[SA_DP] % c->dp_rep)) {
        fprintf(stderr, "p3d-sim: error: --dp-replicate is torchtitan's "
                "HSDP: --framework titan, and it must divide --dp\n");
        return -1;
    }
    if (c->framework == SIM_FW_DEEPSPEED &&
        (c->size[SA_PP] > 1 || c->size[SA_CP] > 1 || c->ep > 1)) {
        fprintf(stderr, "p3d-sim: error: --framework deepspeed is TP + DP: "
                "give --tp and --dp\n");
        return -1;
    }
    if (sim_parse_order(c->order_str, c->order) != 0 ||
        c->world > SIM_MAX_RANKS || c->size[SA_PP] > SIM_MAX_STAGES ||
        c->m < 1 || c->vpp < 1 || c->iters < 1 || c->iters > SIM_MAX_ITERS ||
        c->layers < 1 || c->buckets < 1)
        return -1;
    if (c->vpp > 1 && (c->size[SA_PP] < 3 || c->m % c->size[SA_PP])) {
        fprintf(stderr, "p3d-sim: error: --vpp needs pp > 2 (batched P2P, "
                        "as Megatron) and m a multiple of pp\n");
        return -1;
    }
    if (c->n_skew && c->hosts == 0)
        c->hosts = c->world;
    if (c->hosts < 0 || (c->hosts && c->world % c->hosts))
        return -1;
    if (!c->job_id[0])
        snprintf(c->job_id, sizeof(c->job_id), "sim-%ld", (long)getpid());
    if (!strcmp(c->job_id, ".") || !strcmp(c->job_id, "..") ||
        strchr(c->job_id, '/')) {
        fprintf(stderr, "p3d-sim: error: --job-id '%s' must name one "
                        "folder inside --out (no '/', not . or ..)\n",
                c->job_id);
        return -1;
    }
    return 0;
}

/* 0 ok, 1 help printed, -1 bad usage (message printed). */
int sim_parse_args(struct sim_cfg *c, int argc, char **argv)
{
    int o;

    sim_defaults(c);
    optind = 1;
    while ((o = getopt_long(argc, argv, "m:h", sim_opts, NULL)) != -1) {
        if (o == 'h') {
            fputs(sim_usage, stdout);
            return 1;
        }
        if (o == '?' || sim_opt(c, o, optarg) != 0)
            goto bad;
    }
    /* after "--": the job's own command line, for the shim to record */
    if ((optind == argc || !strcmp(argv[optind - 1], "--")) &&
        sim_check(c) == 0)
        return 0;
bad:
    fprintf(stderr, "p3d-sim: error: bad usage\n%s", sim_usage);
    return -1;
}
