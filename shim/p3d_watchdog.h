/*
 * p3d_watchdog.h - the watchdog thread: writes a hang report (stderr and
 * a P3D_REC_HANG record) once the oldest incomplete NCCL op has been
 * pending longer than P3D_HANG_TIMEOUT, and finalizes the trace file
 * when the process gets SIGTERM (torchrun's way of stopping workers).
 *
 * The thread blocks every signal, never calls NCCL or CUDA, and never
 * takes a lock the application's NCCL path takes; it reads the in-flight
 * table (p3d_inflight.h) and the stack table (p3d_stack.h).
 *
 * P3D_HANG_TIMEOUT: seconds (decimal, e.g. "300" or "0.5"), "0" turns the
 * hang report off; anything else is warned about and the default
 * (P3D_HANG_TIMEOUT_DEFAULT) is used.
 */
#ifndef P3D_WATCHDOG_H
#define P3D_WATCHDOG_H

#include <stdint.h>

#define P3D_HANG_TIMEOUT_DEFAULT 300.0 /* below PyTorch's 600 s */
#define P3D_WD_COMM_NAMES 512
#define P3D_WD_NAME_LEN 48

/*
 * Start the thread and the SIGTERM handler once (first NCCL op).  Inline:
 * every op calls it; after the first it is one load.
 */
void p3d_watchdog_start_slow(void);
extern int p3d_wd_ready;     /* set (release) once the watchdog started */

static inline void p3d_watchdog_start(void)
{
    if (!__atomic_load_n(&p3d_wd_ready, __ATOMIC_ACQUIRE))
        p3d_watchdog_start_slow();
}

/* Remember a communicator's commName (for the report's label). */
void p3d_watchdog_comm_name(uint64_t comm_hash, const char *name);

/*
 * Parse a P3D_HANG_TIMEOUT value strictly into nanoseconds: digits with
 * an optional fraction.  Returns 0 and *ns (0 = off), -1 if malformed.
 */
int p3d_watchdog_parse_timeout(const char *s, uint64_t *ns);

/*
 * Format the hang report for the pending ops `ops[0..n)` (oldest first;
 * n_all pending in all) at time `now` into buf; returns its length.
 * Every line starts with "p3dtrace: ".  (Exposed for unit tests.)
 */
struct p3d_inflight_op;
size_t p3d_watchdog_format(char *buf, size_t cap,
                           const struct p3d_inflight_op *ops, int n,
                           int n_all, uint64_t now);

#endif /* P3D_WATCHDOG_H */
