/*
 * p3d_format.h - the on-disk trace format of p3dtrace.
 *
 * This header is the only contract between the recording shim
 * (libp3dtrace.so) and the analyzer (p3d-analyze).  Everything either side
 * needs to agree on lives here: the file header, the chunk layout, every
 * record type with its tag and size, and the enums stored in records.
 *
 * Byte order: little-endian, always.  Both halves refuse to build on a
 * big-endian host, so there is no swap path to get wrong.
 *
 * Versioning (see style guide H7):
 *   - P3D_FORMAT_MAJOR changes when an old reader would misread a new file;
 *     readers refuse a newer major.
 *   - P3D_FORMAT_MINOR changes when records or trailing fields are added;
 *     readers accept a newer minor, skip unknown optional records and ignore
 *     bytes past the fields they know at the end of a record.
 *
 * File layout
 * -----------
 *   OFFSET              SIZE          DESCRIPTION
 *   0                   256           struct p3d_file_hdr
 *   256                 data_off-256  zero padding
 *   data_off            chunk_bytes   chunk 0
 *   data_off+chunk_bytes chunk_bytes  chunk 1 ... until end of file
 *
 * The shim maps the file MAP_SHARED and appends records straight into the
 * mapping, so after kill -9 the kernel still holds every record whose call
 * returned.  Each writing thread owns one chunk at a time and fills it
 * sequentially; a record's 4-byte header is stored last (release order), so
 * a reader sees either a whole record or a zero tag.
 *
 * Chunk layout
 * ------------
 *   struct p3d_chunk_hdr   (tag P3D_REC_CHUNK)
 *   records ...            each starts with struct p3d_rec_hdr, len is a
 *                          multiple of 8 and includes the header
 *   tag == 0               end of the records of this chunk (unused space)
 * A record never straddles chunks.  A chunk whose header tag is 0 was
 * reserved but never written (a thread died before its first record).
 *
 * Record header
 * -------------
 *   OFFSET  SIZE  DESCRIPTION
 *   0       2     tag; bit 15 set = optional: unknown optional tags are
 *                 skipped, an unknown required tag makes the file unreadable
 *   2       2     len: total record length in bytes, header included,
 *                 a multiple of 8, at least 8
 *
 * Timestamps are CLOCK_MONOTONIC nanoseconds of the recording host unless a
 * field says otherwise.  The file header holds one (CLOCK_REALTIME,
 * CLOCK_MONOTONIC) pair taken together, so hosts can be put on one clock.
 */
#ifndef P3D_FORMAT_H
#define P3D_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "p3dtrace traces are little-endian; big-endian hosts are not supported"
#endif

#define P3D_MAGIC "P3DTRACE"  /* 8 bytes, no NUL on disk */
#define P3D_MAGIC_LEN 8
#define P3D_FORMAT_MAJOR 1
#define P3D_FORMAT_MINOR 0

#define P3D_FILE_HDR_BYTES 256
#define P3D_DATA_OFFSET 4096u        /* default data_off written by the shim */
#define P3D_CHUNK_BYTES 65536u       /* default chunk_bytes */
#define P3D_JOB_ID_LEN 64
#define P3D_HOST_LEN 64
#define P3D_REC_ALIGN 8
#define P3D_REC_MAX_LEN 65528u       /* largest len that is a multiple of 8;
                                      * a record must also fit in a chunk
                                      * after its header: chunk_bytes - 16 */

/* Header flags. */
#define P3D_F_CLOSED 0x0001u         /* finalized by a clean process exit */
#define P3D_F_DROPPED 0x0002u        /* some records were dropped */
#define P3D_F_TRUNCATED_STR 0x0004u  /* some strings were cut to fit */
#define P3D_F_FORKED 0x0008u         /* written by a forked child */

/*
 * File header, at offset 0.
 *   OFFSET SIZE DESCRIPTION
 *   0      8    magic "P3DTRACE"
 *   8      2    major version
 *   10     2    minor version
 *   12     2    hdr_len (256)
 *   14     2    flags (P3D_F_*)
 *   16     4    chunk_bytes: size of every chunk
 *   20     4    data_off: offset of chunk 0
 *   24     4    rank: global rank of the process (-1 unknown)
 *   28     4    world_size (-1 unknown)
 *   32     4    local_rank (-1 unknown)
 *   36     4    local_world_size (-1 unknown)
 *   40     8    pid
 *   48     8    ppid
 *   56     8    start_realtime_ns (CLOCK_REALTIME)
 *   64     8    start_mono_ns (CLOCK_MONOTONIC, read next to the above)
 *   72     8    end_mono_ns: 0 until the file is closed cleanly
 *   80     8    n_records written (maintained at close; 0 if killed)
 *   88     8    dropped_records
 *   96     64   job_id, NUL-padded
 *   160    64   hostname, NUL-padded
 *   224    4    nccl_version_runtime (ncclGetVersion, 0 unknown)
 *   228    4    nccl_version_compile (NCCL_VERSION_CODE of the shim)
 *   232    8    clock_uncertainty_ns of the realtime/mono pair
 *   240    16   reserved, zero
 */
struct p3d_file_hdr {
    char magic[P3D_MAGIC_LEN];
    uint16_t major;
    uint16_t minor;
    uint16_t hdr_len;
    uint16_t flags;
    uint32_t chunk_bytes;
    uint32_t data_off;
    int32_t rank;
    int32_t world_size;
    int32_t local_rank;
    int32_t local_world_size;
    uint64_t pid;
    uint64_t ppid;
    uint64_t start_realtime_ns;
    uint64_t start_mono_ns;
    uint64_t end_mono_ns;
    uint64_t n_records;
    uint64_t dropped_records;
    char job_id[P3D_JOB_ID_LEN];
    char hostname[P3D_HOST_LEN];
    uint32_t nccl_version_runtime;
    uint32_t nccl_version_compile;
    uint64_t clock_uncertainty_ns;
    uint8_t reserved[16];
};

struct p3d_rec_hdr {
    uint16_t tag;
    uint16_t len;
};

#define P3D_TAG_OPTIONAL 0x8000u

/*
 * Record tags.  Required records (bit 15 clear) carry facts without which
 * an analysis would be wrong; optional ones add detail an old reader may
 * skip.  X(name, value, struct, text)
 */
#define P3D_RECORDS(X)                                                        \
    X(P3D_REC_CHUNK, 0x0001, p3d_chunk_hdr, "chunk")                          \
    X(P3D_REC_COMM, 0x0002, p3d_rec_comm, "comm")                             \
    X(P3D_REC_COMM_INFO, 0x0003, p3d_rec_comm_info, "comm_info")              \
    X(P3D_REC_COMM_END, 0x0004, p3d_rec_comm_end, "comm_end")                 \
    X(P3D_REC_OP, 0x0005, p3d_rec_op, "op")                                   \
    X(P3D_REC_GROUP, 0x0006, p3d_rec_group, "group")                          \
    X(P3D_REC_CMDLINE, 0x8001, p3d_rec_str, "cmdline")                        \
    X(P3D_REC_ENV, 0x8002, p3d_rec_str, "env")                                \
    X(P3D_REC_GPU_OP, 0x8003, p3d_rec_gpu_op, "gpu_op")                       \
    X(P3D_REC_GPU_SPAN, 0x8004, p3d_rec_gpu_span, "gpu_span")                 \
    X(P3D_REC_CLOCK_SYNC, 0x8005, p3d_rec_clock_sync, "clock_sync")           \
    X(P3D_REC_MEM, 0x8006, p3d_rec_mem, "mem")                                \
    X(P3D_REC_STACK, 0x8007, p3d_rec_stack, "stack")                          \
    X(P3D_REC_MODULE, 0x8008, p3d_rec_module, "module")                       \
    X(P3D_REC_HANG, 0x8009, p3d_rec_hang, "hang")                             \
    X(P3D_REC_MARK, 0x800a, p3d_rec_mark, "mark")                             \
    X(P3D_REC_SUMMARY, 0x800b, p3d_rec_summary, "summary")                    \
    X(P3D_REC_NOTE, 0x800c, p3d_rec_str, "note")                              \
    X(P3D_REC_GPU_WINDOW, 0x800d, p3d_rec_gpu_window, "gpu_window")

enum p3d_rec_tag {
#define P3D_X_TAG(name, value, type, text) name = value,
    P3D_RECORDS(P3D_X_TAG)
#undef P3D_X_TAG
};

/*
 * Chunk header: first record of every chunk.
 *   0  4  hdr (tag P3D_REC_CHUNK, len 16)
 *   4  4  tid: kernel thread id of the owning thread
 *   8  4  index: chunk number in the file
 *   12 4  reserved
 */
struct p3d_chunk_hdr {
    struct p3d_rec_hdr h;
    uint32_t tid;
    uint32_t index;
    uint32_t reserved;
};

/*
 * NCCL operations.  X(name, text, traits): the traits say what the
 * analyzer needs to know of an op kind, so that a new kind is one row here
 * (and its wrapper in the shim):
 *   P3D_OPK_P2P       a point-to-point op (peer, not a collective)
 *   P3D_OPK_ROOTED    the op has a root (all members must agree on it)
 *   P3D_OPK_BW_AR     nccl-tests' busbw factor 2(n-1)/n (AllReduce)
 *   P3D_OPK_BW_RING   busbw factor (n-1)/n (each rank's part travels)
 *                     (neither: factor 1)
 *   P3D_OPK_BYTES_N   the record's count is one rank's part: the buffer
 *                     nccl-tests measures is n times it
 * (nccl-tests doc/PERFORMANCE.md, "bus bandwidth".)
 */
#define P3D_OPK_P2P 1u
#define P3D_OPK_ROOTED 2u
#define P3D_OPK_BW_AR 4u
#define P3D_OPK_BW_RING 8u
#define P3D_OPK_BYTES_N 16u
#define P3D_OPS(X)                                                            \
    X(P3D_OP_ALLREDUCE, "AllReduce", P3D_OPK_BW_AR)                           \
    X(P3D_OP_REDUCESCATTER, "ReduceScatter", P3D_OPK_BW_RING | P3D_OPK_BYTES_N) \
    X(P3D_OP_ALLGATHER, "AllGather", P3D_OPK_BW_RING | P3D_OPK_BYTES_N)       \
    X(P3D_OP_BROADCAST, "Broadcast", P3D_OPK_ROOTED)                          \
    X(P3D_OP_REDUCE, "Reduce", P3D_OPK_ROOTED)                                \
    X(P3D_OP_ALLTOALL, "AlltoAll", P3D_OPK_BW_RING)                           \
    X(P3D_OP_GATHER, "Gather", P3D_OPK_ROOTED | P3D_OPK_BW_RING)              \
    X(P3D_OP_SCATTER, "Scatter", P3D_OPK_ROOTED | P3D_OPK_BW_RING)            \
    X(P3D_OP_SEND, "Send", P3D_OPK_P2P)                                       \
    X(P3D_OP_RECV, "Recv", P3D_OPK_P2P)

enum p3d_op {
#define P3D_X_OP(name, text, traits) name,
    P3D_OPS(P3D_X_OP)
#undef P3D_X_OP
        P3D_OP_COUNT
};

#define P3D_OP_IS_P2P(op) ((op) == P3D_OP_SEND || (op) == P3D_OP_RECV)

/* Op flags. */
#define P3D_OPF_IN_GROUP 0x01      /* issued inside ncclGroupStart/End */
#define P3D_OPF_BCAST_API 0x02     /* called as ncclBcast (in place) */
#define P3D_OPF_COMM_UNKNOWN 0x04  /* comm not seen at init: hash = pointer */
#define P3D_OPF_IN_PLACE 0x08      /* sendbuff == recvbuff (or offset) */
#define P3D_OPF_CAPTURING 0x10     /* stream was being graph-captured */

#define P3D_REDOP_NONE 0xff        /* not a reduction */
#define P3D_REDOP_CUSTOM 0xfe      /* ncclRedOpCreatePreMulSum and friends */

/*
 * One NCCL collective or point-to-point call.
 *   0  4  hdr
 *   4  1  op (enum p3d_op)
 *   5  1  dtype: raw ncclDataType_t
 *   6  1  redop: raw ncclRedOp_t, or P3D_REDOP_NONE / P3D_REDOP_CUSTOM
 *   7  1  flags (P3D_OPF_*)
 *   8  8  op_id: unique in the file, increasing in call order
 *   16 8  comm_hash: NCCL commHash of the communicator
 *   24 8  seq: collectives: per-communicator count of collective calls
 *         before this one (0-based, all collective kinds together, calls
 *         that returned an error included);
 *         Send: per (comm, peer) count of earlier sends to peer;
 *         Recv: per (comm, peer) count of earlier receives from peer
 *   32 8  count as passed to NCCL (per rank for AllGather/ReduceScatter)
 *   40 8  bytes: count * sizeof(dtype)
 *   48 8  stream (cudaStream_t value)
 *   56 8  t_enter
 *   64 8  t_exit; 0 = the call had not returned when the trace ended
 *         (a shim may write the record before the real call and fill
 *         t_exit and ret in place after it returns)
 *   72 4  peer: root of rooted collectives, peer of Send/Recv, else -1
 *   76 4  ret: ncclResult_t the real call returned (meaningless while
 *         t_exit == 0)
 *   80 4  tid
 *   84 4  group_id: id of the outermost open group, 0 outside groups
 *   88 4  stack_id: call-site stack (P3D_REC_STACK), 0 if none
 *   92 4  comm_rank: rank of this process in the comm (-1 unknown)
 */
struct p3d_rec_op {
    struct p3d_rec_hdr h;
    uint8_t op;
    uint8_t dtype;
    uint8_t redop;
    uint8_t flags;
    uint64_t op_id;
    uint64_t comm_hash;
    uint64_t seq;
    uint64_t count;
    uint64_t bytes;
    uint64_t stream;
    uint64_t t_enter;
    uint64_t t_exit;
    int32_t peer;
    int32_t ret;
    uint32_t tid;
    uint32_t group_id;
    uint32_t stack_id;
    int32_t comm_rank;
};

/* How a communicator came to be.  X(name, text) */
#define P3D_COMM_HOWS(X)                                                      \
    X(P3D_COMM_INIT_RANK, "ncclCommInitRank")                                 \
    X(P3D_COMM_INIT_CONFIG, "ncclCommInitRankConfig")                         \
    X(P3D_COMM_INIT_SCALABLE, "ncclCommInitRankScalable")                     \
    X(P3D_COMM_INIT_ALL, "ncclCommInitAll")                                   \
    X(P3D_COMM_SPLIT, "ncclCommSplit")                                        \
    X(P3D_COMM_SHRINK, "ncclCommShrink")

enum p3d_comm_how {
#define P3D_X_HOW(name, text) name,
    P3D_COMM_HOWS(P3D_X_HOW)
#undef P3D_X_HOW
        P3D_COMM_HOW_COUNT
};

#define P3D_COMMF_NOCOLOR 0x01     /* split with NCCL_SPLIT_NOCOLOR: no comm */
#define P3D_COMMF_NONBLOCKING 0x02 /* config->blocking == 0 */
#define P3D_COMMF_PARENT_UNKNOWN 0x04

/*
 * A communicator created (or a NOCOLOR split taken part in).
 *   0  4  hdr
 *   4  1  how (enum p3d_comm_how)
 *   5  1  flags (P3D_COMMF_*)
 *   6  2  reserved
 *   8  8  comm_hash (0 for a NOCOLOR split)
 *   16 8  parent_hash (0 for a root communicator)
 *   24 8  comm_ptr: the ncclComm_t value in this process
 *   32 8  t_enter
 *   40 8  t_exit
 *   48 4  nranks (-1 until known, see P3D_REC_COMM_INFO)
 *   52 4  rank in the communicator (-1 until known)
 *   56 4  color (split), else 0
 *   60 4  key (split), else 0
 *   64 4  split_count: the parent's split counter this split used
 *   68 4  device: CUDA device (-1 unknown)
 *   72 4  ret: ncclResult_t (ncclInProgress for non-blocking inits)
 *   76 4  tid
 *   80 .. name: NUL-terminated commName from ncclConfig_t, may be empty
 */
struct p3d_rec_comm {
    struct p3d_rec_hdr h;
    uint8_t how;
    uint8_t flags;
    uint16_t reserved;
    uint64_t comm_hash;
    uint64_t parent_hash;
    uint64_t comm_ptr;
    uint64_t t_enter;
    uint64_t t_exit;
    int32_t nranks;
    int32_t rank;
    int32_t color;
    int32_t key;
    int32_t split_count;
    int32_t device;
    int32_t ret;
    uint32_t tid;
    char name[];
};

/*
 * Facts about a communicator learned after its init returned (non-blocking
 * inits and splits learn nranks/rank/device later).
 *   0 4 hdr | 4 4 reserved | 8 8 comm_hash | 16 8 t
 *   24 4 nranks | 28 4 rank | 32 4 device | 36 4 reserved
 */
struct p3d_rec_comm_info {
    struct p3d_rec_hdr h;
    uint32_t reserved;
    uint64_t comm_hash;
    uint64_t t;
    int32_t nranks;
    int32_t rank;
    int32_t device;
    int32_t reserved2;
};

#define P3D_COMM_ENDS(X)                                                      \
    X(P3D_END_FINALIZE, "ncclCommFinalize")                                   \
    X(P3D_END_DESTROY, "ncclCommDestroy")                                     \
    X(P3D_END_ABORT, "ncclCommAbort")                                         \
    X(P3D_END_REVOKE, "ncclCommRevoke")

enum p3d_comm_end_how {
#define P3D_X_END(name, text) name,
    P3D_COMM_ENDS(P3D_X_END)
#undef P3D_X_END
        P3D_END_COUNT
};

/*
 * End of a communicator's life (or a revoke).
 *   0 4 hdr | 4 1 how | 5 3 reserved | 8 8 comm_hash | 16 8 t_enter
 *   24 8 t_exit | 32 4 ret | 36 4 tid
 *   40 4 last_async_error: last non-success ncclCommGetAsyncError result
 *        seen on this comm before the call (0 none): the abort's reason
 *   44 4 pending_ops: ops of this comm enqueued but not known complete
 */
struct p3d_rec_comm_end {
    struct p3d_rec_hdr h;
    uint8_t how;
    uint8_t reserved[3];
    uint64_t comm_hash;
    uint64_t t_enter;
    uint64_t t_exit;
    int32_t ret;
    uint32_t tid;
    int32_t last_async_error;
    uint32_t pending_ops;
};

/*
 * ncclGroupStart / ncclGroupEnd.
 *   0 4 hdr | 4 1 is_end | 5 1 depth after the call | 6 2 reserved
 *   8 8 t_enter | 16 8 t_exit (0 = ncclGroupEnd never returned: the
 *   record is written before the call and completed after it)
 *   24 4 group_id | 28 4 ret | 32 4 tid
 *   36 4 n_ops issued inside (ends only, outermost level)
 */
struct p3d_rec_group {
    struct p3d_rec_hdr h;
    uint8_t is_end;
    uint8_t depth;
    uint16_t reserved;
    uint64_t t_enter;
    uint64_t t_exit;
    uint32_t group_id;
    int32_t ret;
    uint32_t tid;
    uint32_t n_ops;
};

/*
 * A string record (cmdline: argv NUL-separated; env: KEY=VALUE
 * NUL-separated; note: free text such as a warning the shim printed, or
 * "SIGTERM received" when the process was terminated by SIGTERM and the
 * shim finalized the file on the way out).
 *   0 4 hdr | 4 4 n_bytes of text | 8 .. text
 */
struct p3d_rec_str {
    struct p3d_rec_hdr h;
    uint32_t n_bytes;
    char text[];
};

/* Sources of GPU times. */
#define P3D_GPU_SRC_CUPTI 1
#define P3D_GPU_SRC_EVENTS 2
#define P3D_GPU_SRC_PLUGIN 3
#define P3D_GPU_SRC_STREAM 4   /* completion of the stream's work only */

/*
 * GPU start/end of an op (times already in the host CLOCK_MONOTONIC domain).
 *   0 4 hdr | 4 1 source | 5 1 algo | 6 1 proto | 7 1 nchannels
 *   8 8 op_id | 16 8 gpu_start | 24 8 gpu_end (0 = never completed)
 */
struct p3d_rec_gpu_op {
    struct p3d_rec_hdr h;
    uint8_t source;
    uint8_t algo;
    uint8_t proto;
    uint8_t nchannels;
    uint64_t op_id;
    uint64_t gpu_start;
    uint64_t gpu_end;
};

#define P3D_SPAN_COMPUTE 1
#define P3D_SPAN_COPY 2
#define P3D_SPAN_NCCL 3

/*
 * A merged busy interval of one stream: kernels/copies whose gaps were
 * below the merge threshold.
 *   0 4 hdr | 4 1 kind | 5 1 reserved | 6 2 device | 8 8 stream
 *   16 8 start | 24 8 end | 32 8 busy_ns (sum of the members' durations)
 *   40 4 n_items | 44 4 reserved
 */
struct p3d_rec_gpu_span {
    struct p3d_rec_hdr h;
    uint8_t kind;
    uint8_t reserved;
    uint16_t device;
    uint64_t stream;
    uint64_t start;
    uint64_t end;
    uint64_t busy_ns;
    uint32_t n_items;
    uint32_t reserved2;
};

/*
 * One pairing of a GPU clock with the host clock.
 *   0 4 hdr | 4 4 device | 8 8 gpu_ns | 16 8 host_mono_ns
 *   24 8 uncertainty_ns
 */
struct p3d_rec_clock_sync {
    struct p3d_rec_hdr h;
    int32_t device;
    uint64_t gpu_ns;
    uint64_t host_mono_ns;
    uint64_t uncertainty_ns;
};

#define P3D_MEM_KINDS(X)                                                      \
    X(P3D_MEM_DEVICE, "device")          /* framework device allocations */  \
    X(P3D_MEM_HOST_PINNED, "host_pinned")                                     \
    X(P3D_MEM_MANAGED, "managed")                                             \
    X(P3D_MEM_DEVICE_USED, "device_used") /* cudaMemGetInfo, whole device */

enum p3d_mem_kind {
#define P3D_X_MEM(name, text) name,
    P3D_MEM_KINDS(P3D_X_MEM)
#undef P3D_X_MEM
        P3D_MEM_KIND_COUNT
};

/*
 * Memory level change (throttled; peaks always recorded).
 *   0 4 hdr | 4 1 kind | 5 1 reserved | 6 2 device | 8 8 t
 *   16 8 current bytes | 24 8 peak bytes
 */
struct p3d_rec_mem {
    struct p3d_rec_hdr h;
    uint8_t kind;
    uint8_t reserved;
    uint16_t device;
    uint64_t t;
    uint64_t current;
    uint64_t peak;
};

/*
 * An interned call-site stack: return addresses, innermost first.
 *   0 4 hdr | 4 4 stack_id | 8 4 n_frames | 12 4 reserved | 16 .. u64 pc[]
 */
struct p3d_rec_stack {
    struct p3d_rec_hdr h;
    uint32_t stack_id;
    uint32_t n_frames;
    uint32_t reserved;
    uint64_t pc[];
};

/*
 * A loaded object, so the analyzer can turn pcs into file + offset.
 *   0 4 hdr | 4 4 reserved | 8 8 base | 16 8 size | 24 .. path, NUL-terminated
 */
struct p3d_rec_module {
    struct p3d_rec_hdr h;
    uint32_t reserved;
    uint64_t base;
    uint64_t size;
    char path[];
};

/*
 * The watchdog found an op pending longer than P3D_HANG_TIMEOUT.
 *   0 4 hdr | 4 4 n_pending ops | 8 8 t | 16 8 op_id of the oldest pending
 *   24 8 comm_hash | 32 8 seq | 40 8 pending_ns | 48 4 stack_id
 *   52 4 peer | 56 1 op | 57 7 reserved
 * op == P3D_HANG_OP_INIT: the rank is blocked in a communicator init or
 * split; comm_hash is the communicator being made (the parent for a
 * split), seq its nranks, peer this rank's rank in it.
 */
#define P3D_HANG_OP_INIT 0x80
struct p3d_rec_hang {
    struct p3d_rec_hdr h;
    uint32_t n_pending;
    uint64_t t;
    uint64_t op_id;
    uint64_t comm_hash;
    uint64_t seq;
    uint64_t pending_ns;
    uint32_t stack_id;
    int32_t peer;
    uint8_t op;
    uint8_t reserved[7];
};

/*
 * A marker from the job (e.g. an iteration boundary).
 *   0 4 hdr | 4 4 reserved | 8 8 t | 16 8 value | 24 .. name, NUL-terminated
 */
struct p3d_rec_mark {
    struct p3d_rec_hdr h;
    uint32_t reserved;
    uint64_t t;
    uint64_t value;
    char name[];
};

/*
 * Written once at clean exit.
 *   0 4 hdr | 4 4 reserved | 8 8 t | 16 8 async_error_polls
 *   24 8 ops_recorded | 32 8 dropped | 40 32 peak bytes per mem kind
 */
struct p3d_rec_summary {
    struct p3d_rec_hdr h;
    uint32_t reserved;
    uint64_t t;
    uint64_t async_error_polls;
    uint64_t ops_recorded;
    uint64_t dropped;
    uint64_t peak[4];
};

/*
 * Kernel records (CUPTI) start (on = 1) or stop (on = 0) at host time t.
 * A trace with these records has compute/copy spans only inside its
 * windows: [t of an on, t of the next off, or the end of the trace).
 * A trace without them has spans for the whole run (or for none).
 *   0 4 hdr | 4 4 on | 8 8 t
 */
struct p3d_rec_gpu_window {
    struct p3d_rec_hdr h;
    uint32_t on;
    uint64_t t;
};

#define P3D_FORMAT_ASSERT(type, size)                                         \
    _Static_assert(sizeof(struct type) == (size), #type " size changed")

P3D_FORMAT_ASSERT(p3d_file_hdr, P3D_FILE_HDR_BYTES);
P3D_FORMAT_ASSERT(p3d_rec_hdr, 4);
P3D_FORMAT_ASSERT(p3d_chunk_hdr, 16);
P3D_FORMAT_ASSERT(p3d_rec_op, 96);
P3D_FORMAT_ASSERT(p3d_rec_comm, 80);
P3D_FORMAT_ASSERT(p3d_rec_comm_info, 40);
P3D_FORMAT_ASSERT(p3d_rec_comm_end, 48);
P3D_FORMAT_ASSERT(p3d_rec_group, 40);
P3D_FORMAT_ASSERT(p3d_rec_str, 8);
P3D_FORMAT_ASSERT(p3d_rec_gpu_op, 32);
P3D_FORMAT_ASSERT(p3d_rec_gpu_span, 48);
P3D_FORMAT_ASSERT(p3d_rec_clock_sync, 32);
P3D_FORMAT_ASSERT(p3d_rec_mem, 32);
P3D_FORMAT_ASSERT(p3d_rec_stack, 16);
P3D_FORMAT_ASSERT(p3d_rec_module, 24);
P3D_FORMAT_ASSERT(p3d_rec_hang, 64);
P3D_FORMAT_ASSERT(p3d_rec_mark, 24);
P3D_FORMAT_ASSERT(p3d_rec_summary, 72);
P3D_FORMAT_ASSERT(p3d_rec_gpu_window, 16);
_Static_assert(offsetof(struct p3d_file_hdr, job_id) == 96, "hdr layout");
_Static_assert(offsetof(struct p3d_file_hdr, hostname) == 160, "hdr layout");
_Static_assert(offsetof(struct p3d_rec_op, comm_rank) == 92, "op layout");

/* Round a record length up to the record alignment. */
#define P3D_REC_ROUND(n) (((n) + (P3D_REC_ALIGN - 1)) & ~(size_t)(P3D_REC_ALIGN - 1))

#endif /* P3D_FORMAT_H */
