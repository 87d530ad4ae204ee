/*
 * Requests: one object for every pending operation (point-to-point, persistent,
 * generalized, collective schedules). The device completes a request with
 * hashi_request_complete(); MPI_Wait & co. poll `complete` and drive progress.
 */
#ifndef HASHI_MPI_REQUEST_H
#define HASHI_MPI_REQUEST_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "device/device.h"

enum hashi_req_kind {
    HASHI_REQ_SEND,
    HASHI_REQ_RECV,
    HASHI_REQ_PREQ_SEND,   /* persistent send (MPI_Send_init ...) */
    HASHI_REQ_PREQ_RECV,   /* persistent receive */
    HASHI_REQ_GREQ,        /* generalized request */
    HASHI_REQ_COLL,        /* collective schedule (blocking, nonblocking, persistent) */
};

enum hashi_send_mode {
    HASHI_SEND_STANDARD, HASHI_SEND_SYNC, HASHI_SEND_READY, HASHI_SEND_BUFFERED
};

/* Bytes kept in the request for the device's own per-operation state
 * (libfabric contexts, protocol state); large enough for all devices. */
#define HASHI_DEVICE_REQ_BYTES 192

struct MPI_ABI_Request {
    enum hashi_req_kind kind;
    _Atomic int complete;           /* set last, with release ordering */
    int persistent;                 /* survives completion until MPI_Request_free */
    int active;                     /* persistent: started and not yet completed */
    int freed;                      /* MPI_Request_free on an active request */
    MPI_Status status;

    /* The operation as the MPI call described it. */
    void *user_buf;
    MPI_Count count;
    MPI_Datatype datatype;
    struct MPI_ABI_Comm *comm;
    int peer;                       /* dest or source rank in comm (or ANY_SOURCE) */
    int tag;
    enum hashi_send_mode send_mode;

    /* The operation as the device sees it: contiguous bytes and an envelope. */
    void *dev_buf;
    size_t dev_bytes;
    uint32_t context_id;
    int dest_world;                 /* send: the destination's world rank */
    int my_comm_rank;               /* send: the sender's rank in comm */
    struct hashi_match match;       /* receive */
    void *pack_buf;                 /* packed copy of non-contiguous data, or NULL */

    /* Run on completion (unpack, release a Bsend buffer, next schedule step). */
    void (*on_complete)(struct MPI_ABI_Request *req);
    void *extra;                    /* owner data for on_complete / collectives */

    struct MPI_ABI_Request *next_free;
    _Alignas(16) unsigned char dev[HASHI_DEVICE_REQ_BYTES];
};

/* The status' hidden fields: a 64-bit byte count and the cancelled flag. */
static inline void hashi_status_set_bytes(MPI_Status *st, uint64_t bytes)
{
    st->MPI_internal[0] = (int)(uint32_t)bytes;
    st->MPI_internal[1] = (int)(uint32_t)(bytes >> 32);
}
static inline uint64_t hashi_status_bytes(const MPI_Status *st)
{
    return (uint64_t)(uint32_t)st->MPI_internal[0] | (uint64_t)(uint32_t)st->MPI_internal[1] << 32;
}
static inline void hashi_status_set_cancelled(MPI_Status *st, int cancelled)
{
    st->MPI_internal[2] = cancelled;
}
static inline int hashi_status_cancelled(const MPI_Status *st)
{
    return st->MPI_internal[2];
}

struct MPI_ABI_Request *hashi_request_alloc(enum hashi_req_kind kind);
void hashi_request_free(struct MPI_ABI_Request *req);

/* Called by devices (on the progress path) when an operation finishes. */
void hashi_request_complete(struct MPI_ABI_Request *req);

static inline int hashi_request_is_complete(const struct MPI_ABI_Request *req)
{
    return atomic_load_explicit(&req->complete, memory_order_acquire);
}

#endif
