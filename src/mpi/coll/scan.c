/*
 * MPI_Scan and MPI_Exscan, blocking, nonblocking and persistent (and _c), by
 * recursive doubling: at distance 1, 2, 4 ... partners swap the reduction of
 * their aligned group of ranks ("partial"); the higher partner adds the lower
 * group's partial into its result on the left, both fold it into their
 * partial in rank order. ceil(log2 n) steps, any op (rank order is kept).
 * Exscan's result on rank r covers ranks 0 .. r-1: the first partial a rank
 * receives from below is copied in instead of combined; rank 0's recvbuf is
 * left alone, as the standard says it is undefined. Vectors up to the
 * device's max_bytes go to the device first (blocking, nonblocking and
 * persistent alike): the vector's size decides, the same on every member.
 */
#include "mpi/coll/coll.h"

#include "device/device.h"

int hashi_coll_build_scan(struct hashi_sched *s, const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype type, MPI_Op op, int exclusive, struct MPI_ABI_Comm *c)
{
    const struct MPI_ABI_Datatype *t = hashi_type_get(type);
    int n = c->size, rank = c->rank, rc = MPI_SUCCESS;
    if (count == 0)
        return MPI_SUCCESS;
    const void *input = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    if (n == 1)
        return exclusive || input == recvbuf ? MPI_SUCCESS : hashi_sched_copy(s, input, count, type, recvbuf, count, type);

    /* The partial starts as our input; it is only read until the first
     * combination, which moves it into writable memory. */
    struct hashi_coll_acc partial;
    hashi_coll_acc_init(&partial, input, 0, count, type, op);
    if (input == recvbuf) {
        /* recvbuf gets overwritten: keep the input in a copy. */
        void *copy = hashi_coll_tmpbuf(s, count, t);
        if (!copy)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_copy(s, recvbuf, count, type, copy, count, type);
        hashi_coll_acc_init(&partial, copy, 1, count, type, op);
    } else if (!exclusive) {
        rc = hashi_sched_copy(s, input, count, type, recvbuf, count, type);
    }
    int have_result = !exclusive;   /* exscan: recvbuf holds nothing yet */
    for (int mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
        int peer = rank ^ mask;
        if (peer >= n)
            continue;
        void *other = hashi_coll_acc_recvbuf(s, &partial);
        if (!other)
            return MPI_ERR_NO_MEM;
        rc = hashi_sched_send(s, partial.buf, count, type, peer);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_recv(s, other, count, type, peer);
        if (rc == MPI_SUCCESS)
            rc = hashi_sched_fence(s);
        if (rc != MPI_SUCCESS)
            break;
        if (peer < rank) {
            /* The lower group's reduction goes on the left of ours. */
            if (have_result)
                rc = hashi_sched_reduce(s, other, recvbuf, count, type, op);
            else
                rc = hashi_sched_copy(s, other, count, type, recvbuf, count, type);
            have_result = 1;
        }
        if (rc == MPI_SUCCESS)
            rc = hashi_coll_acc_combine(s, &partial, other, peer < rank);
    }
    return rc;
}

static int scan(const struct hashi_coll_call *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                MPI_Datatype type, MPI_Op op, MPI_Comm comm, int exclusive)
{
    int rc;
    struct MPI_ABI_Datatype *t;
    struct MPI_ABI_Comm *c = hashi_coll_call_allreduce(call, comm, sendbuf, recvbuf, count, type, op, &t, &rc);
    if (!c)
        return rc;
    int kind = exclusive ? HASHI_DEVICE_OP_EXSCAN : HASHI_DEVICE_OP_SCAN;
    if (call->mode == HASHI_COLL_BLOCKING && c->size > 1 && count > 0 &&
        (size_t)hashi_type_bytes(t, count) <= hashi_device->coll.max_bytes) {
        rc = hashi_coll_device_reduction(kind, sendbuf, recvbuf, count, type, op, -1, t, c);
        if (rc == MPI_SUCCESS)
            return MPI_SUCCESS;
        if (rc != HASHI_DEVICE_COLL_DECLINE)
            return hashi_err_comm(call->func, comm, rc, "the device's %s failed", exclusive ? "exscan" : "scan");
    }
    struct hashi_sched *s = hashi_sched_create(c);
    rc = !s ? MPI_ERR_NO_MEM : HASHI_DEVICE_COLL_DECLINE;
    if (s && call->mode != HASHI_COLL_BLOCKING)
        rc = hashi_coll_device_reduction_step(s, kind, sendbuf, recvbuf, count, type, op, -1, t, c);
    if (rc == HASHI_DEVICE_COLL_DECLINE)
        rc = hashi_coll_build_scan(s, sendbuf, recvbuf, count, type, op, exclusive, c);
    return hashi_coll_call_finish(call, comm, s, rc);
}

int hashi_impl_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm)
{
    return scan(HASHI_COLL_CALL_BLOCKING("MPI_Scan"), sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int hashi_impl_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return scan(HASHI_COLL_CALL_BLOCKING("MPI_Scan"), sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int hashi_impl_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request *request)
{
    return scan(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscan", request), sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int hashi_impl_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                     MPI_Request *request)
{
    return scan(HASHI_COLL_CALL_NONBLOCKING("MPI_Iscan", request), sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int hashi_impl_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return scan(HASHI_COLL_CALL_PERSISTENT("MPI_Scan_init", request), sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int hashi_impl_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}

int hashi_impl_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm)
{
    return scan(HASHI_COLL_CALL_BLOCKING("MPI_Exscan"), sendbuf, recvbuf, count, datatype, op, comm, 1);
}

int hashi_impl_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return scan(HASHI_COLL_CALL_BLOCKING("MPI_Exscan"), sendbuf, recvbuf, count, datatype, op, comm, 1);
}

int hashi_impl_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Request *request)
{
    return scan(HASHI_COLL_CALL_NONBLOCKING("MPI_Iexscan", request), sendbuf, recvbuf, count, datatype, op, comm, 1);
}

int hashi_impl_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                       MPI_Request *request)
{
    return scan(HASHI_COLL_CALL_NONBLOCKING("MPI_Iexscan", request), sendbuf, recvbuf, count, datatype, op, comm, 1);
}

int hashi_impl_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return scan(HASHI_COLL_CALL_PERSISTENT("MPI_Exscan_init", request), sendbuf, recvbuf, count, datatype, op, comm, 1);
}

int hashi_impl_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return hashi_impl_Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
}
