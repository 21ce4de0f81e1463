/*
 * fake_stream.h - asynchronous streams of the fake cudart (P3D_FAKE_ASYNC=1).
 *
 * Private to libcudart.so.13 (fake): fake_cudart.c keeps the CUDA API,
 * fake_stream.c the per-stream work queues and their worker threads.
 */
#ifndef P3D_FAKE_STREAM_H
#define P3D_FAKE_STREAM_H

#include <stdint.h>

struct fake_event {
    uint32_t magic;
    unsigned int flags;
    _Atomic uint64_t t_ns;        /* time of the last completed record */
    _Atomic uint64_t recorded;    /* records made */
    _Atomic uint64_t completed;   /* records the stream has reached */
};

struct fake_queue;

int fake_async(void);
/* The queue of a stream handle (created on first use); slot = its storage. */
struct fake_queue *fake_queue_get(struct fake_queue **slot, void *stream);
void fake_queue_kernel(struct fake_queue *q, const char *name, uint64_t dur);
void fake_queue_fn(struct fake_queue *q, void (*fn)(void *), void *arg);
void fake_queue_event(struct fake_queue *q, struct fake_event *ev);
void fake_queue_wait(struct fake_queue *q, struct fake_event *ev);
int fake_queue_idle(struct fake_queue *q);
void fake_queue_sync(struct fake_queue *q);
void fake_queue_sync_all(void);
void fake_queue_destroy(struct fake_queue *q);
void fake_event_sync(struct fake_event *ev);
void fake_sleep_ns(uint64_t ns);

#endif /* P3D_FAKE_STREAM_H */
