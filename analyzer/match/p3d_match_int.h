/*
 * p3d_match_int.h - the matcher's internal state, shared by p3d_match.c
 * (the scan, Send/Recv pairs, the finish) and p3d_match_var.c (the seqs
 * each member took and the variant table of divergent instances).
 */
#ifndef P3D_MATCH_INT_H
#define P3D_MATCH_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "p3d_map.h"
#include "p3d_match.h"

/* One collective instance or Send/Recv slot: 24 bytes, one per seq. */
struct p3d_ref {
    uint64_t count;
    int32_t root, rank; /* rank: the member that set it */
    uint32_t div;       /* 1 + index in the shard's divergent table, or 0 */
    uint8_t op, dtype, redop, set;
};

struct p3d_pair {
    struct p3d_ref *v; /* by seq: the op of whichever side came first */
    size_t cap;
    uint64_t n_seen;   /* ops taken (bounds the seqs believed) */
    int src, dst;      /* comm ranks */
};

struct p3d_run { /* seqs lo .. hi-1 */
    uint64_t lo, hi;
};

/*
 * The collective seqs one member took on one communicator, as runs of
 * consecutive seqs (one run for a healthy trace; a new run only where its
 * seqs jump, so memory follows damage, not ops).
 */
struct p3d_member {
    int32_t rank;       /* global */
    uint32_t n_more;    /* closed runs in more[] */
    struct p3d_take take; /* its seqs as taken (one process only) */
    struct p3d_run last;  /* its last run, past P3D_RUNS_MAX (global seqs;
                             p3d_div_finish, p3d_matcher_last_run) */
    struct p3d_run cur; /* the run being extended */
    struct p3d_run *more;
    size_t more_cap;
};

/*
 * A divergent collective instance: its members did not all agree.  Its
 * variants (distinct records) and the members filed under them are lists
 * threaded through the shard's arrays by index (no allocation per
 * instance).  var0 is the record every member had until the first
 * disagreement; only members whose record differs from var0 are filed
 * (the others, whenever they came, are var0).  Who the members are is
 * read from their runs once all of them are in.
 */
struct p3d_var {
    struct p3d_ref v;
    uint32_t next; /* 1 + index of the instance's next variant, or 0 */
};

struct p3d_vmember {
    int32_t rank;
    uint32_t var;  /* index in the shard's variants */
    uint32_t next; /* 1 + index of the instance's next filed member, or 0 */
};

struct p3d_div {
    uint64_t comm, seq;
    uint64_t li;       /* its index here (p3d_shard.split_n) */
    uint32_t var0;     /* index of variant 0; the others follow it */
    uint32_t mem_head; /* 1 + index of the first filed member, or 0 */
};

struct p3d_mcomm { /* one communicator's instances */
    uint64_t hash;
    struct p3d_ref *v; /* collectives by seq */
    size_t cap;
    struct p3d_map mem_idx; /* global rank -> mem index */
    struct p3d_member *mem;
    size_t n_mem, mem_cap;
    int last_mem;           /* index of the last member looked up */
    struct p3d_map pair_idx; /* src << 32 | dst -> pairs index */
    struct p3d_pair *pairs;
    size_t n_pairs, pairs_cap;
    size_t last_pair;       /* index of the last pair looked up */
};

#define P3D_SHARDS 64

struct p3d_shard {
    pthread_mutex_t lock;
    struct p3d_map idx; /* comm hash -> comms index */
    struct p3d_mcomm *comms;
    size_t n, cap;
    size_t last;         /* index of the last communicator looked up */
    struct p3d_div *div; /* divergent instances (rare) */
    size_t n_div, div_cap;
    struct p3d_var *var; /* their variants */
    size_t n_var, var_cap;
    struct p3d_vmember *vm; /* their members that differ from variant 0 */
    size_t n_vm, vm_cap;
    struct p3d_match_res res;
    /* over several processes: this matcher gets one block of split_block
     * seqs in every split_n of each communicator's collectives
     * (p3d_matcher_split), indexed here without the gaps; 0: all */
    uint64_t split_n, split_block;
};

struct p3d_matcher {
    struct p3d_shard shard[P3D_SHARDS];
};

/* p3d_match_var.c */
/* The member state of global rank `rank` on c (created on first use). */
struct p3d_member *p3d_member_get(struct p3d_mcomm *c, int rank);
/* Note that the member took collective seq. */
void p3d_member_note(struct p3d_member *mb, uint64_t seq);
/* A member of instance r (c, seq) disagrees with it, or r is divergent
 * already: file the member under its variant. */
void p3d_div_add(struct p3d_shard *sh, uint64_t comm, uint64_t seq,
                 uint64_t li, struct p3d_ref *r, int rank,
                 const struct p3d_rec_op *o);
/* All members are in: compare each divergent instance's members with its
 * lowest-ranked member, into sh->res; frees the table and the runs. */
void p3d_div_finish(struct p3d_shard *sh);

/* p3d_match.c */
/* p3d_match_coll on two instance records. */
void p3d_match_ref(struct p3d_match_res *res, uint64_t comm, uint64_t seq,
                   int rank_a, const struct p3d_ref *a, int rank_b,
                   const struct p3d_ref *b);
void p3d_ref_set(struct p3d_ref *r, const struct p3d_rec_op *o, int rank);
/* 1 if o agrees with r in every field p3d_match_coll compares. */
int p3d_ref_agrees(const struct p3d_ref *r, const struct p3d_rec_op *o);

#endif /* P3D_MATCH_INT_H */
