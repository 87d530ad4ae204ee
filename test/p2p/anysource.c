/*
 * anysource: wildcards and status fields. Every rank sends rank 0 messages
 * with tags 0, 1, its rank, MPI_TAG_UB - rank and MPI_TAG_UB; rank 0 receives
 * them with MPI_ANY_SOURCE / MPI_ANY_TAG in every combination and checks that
 * status.MPI_SOURCE / MPI_TAG name the message actually received (its bytes
 * say who sent it with which tag) and that MPI_Get_count is its length. Also:
 * MPI_TAG_UB is at least 2^23 - 1, and MPI_TAG_UB + 1 is refused.
 */
#include "p2p_util.h"

#define NTAGS 5

static void tags_of(int rank, int tag_ub, int tags[NTAGS])
{
    tags[0] = 0;
    tags[1] = 1;
    tags[2] = 100 + rank;
    tags[3] = tag_ub - rank;
    tags[4] = tag_ub;
}

/* Message length: differs per (source, tag) so a swapped status shows. */
static size_t len_of(int source, int k)
{
    return (size_t)(16 + 8 * source + k);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2, "run with at least 2 ranks");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int *tag_ub_attr = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub_attr, &flag));
    CHECK(flag && tag_ub_attr, "MPI_TAG_UB attribute missing");
    int tag_ub = *tag_ub_attr;
    CHECK(tag_ub >= (1 << 23) - 1, "MPI_TAG_UB is %d, less than 2^23 - 1", tag_ub);
    if (tag_ub < 0x7fffffff) {
        char byte = 0;
        CHECK_CLASS(MPI_Send(&byte, 1, MPI_CHAR, 0, tag_ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
    }

    int tags[NTAGS];
    unsigned char buf[256];
    if (rank != 0) {
        tags_of(rank, tag_ub, tags);
        /* Three rounds, each a different receive pattern at rank 0. */
        for (int round = 0; round < 3; round++) {
            for (int k = 0; k < NTAGS; k++) {
                size_t n = len_of(rank, k);
                payload_fill(buf, n, rank, tags[k], round);
                CHECK_MPI(MPI_Send(buf, (int)n, MPI_BYTE, 0, tags[k], MPI_COMM_WORLD));
            }
            CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    } else {
        int expected = (size - 1) * NTAGS;
        /* Round 0: ANY_SOURCE and ANY_TAG. The bytes identify the message. */
        int *seen = calloc((size_t)size * NTAGS, sizeof *seen);
        for (int m = 0; m < expected; m++) {
            MPI_Status st;
            memset(&st, 0xff, sizeof st);
            CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            int src = st.MPI_SOURCE, k;
            CHECK(src > 0 && src < size, "MPI_SOURCE %d out of range", src);
            tags_of(src, tag_ub, tags);
            for (k = 0; k < NTAGS && tags[k] != st.MPI_TAG; k++)
                ;
            CHECK(k < NTAGS, "MPI_TAG %d is not one rank %d sends", st.MPI_TAG, src);
            int count = -1;
            CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
            CHECK(count == (int)len_of(src, k), "count %d for (source %d, tag %d), expected %zu", count, src,
                  st.MPI_TAG, len_of(src, k));
            CHECK(payload_check(buf, (size_t)count, src, tags[k], 0) < 0,
                  "the bytes are not (source %d, tag %d)'s: status names another message", src, st.MPI_TAG);
            CHECK(!seen[src * NTAGS + k]++, "(source %d, tag %d) received twice", src, st.MPI_TAG);
        }
        free(seen);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

        /* Round 1: a given source with ANY_TAG, then ANY_SOURCE with a given tag. */
        for (int src = size - 1; src > 0; src--) {
            tags_of(src, tag_ub, tags);
            for (int k = 0; k < NTAGS; k++) {
                MPI_Status st;
                CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
                /* From one source with ANY_TAG, the order of sending. */
                CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tags[k], "got (%d, %d), expected (%d, %d)",
                      st.MPI_SOURCE, st.MPI_TAG, src, tags[k]);
                CHECK(payload_check(buf, len_of(src, k), src, tags[k], 1) < 0, "round 1: wrong bytes");
            }
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

        /* Round 2: specific tags in reverse order, any source: tag matching
         * picks messages out of the queue, not the queue's head. */
        for (int src = 1; src < size; src++) {
            tags_of(src, tag_ub, tags);
            for (int k = NTAGS - 1; k >= 0; k--) {
                if (k == 0 || k == 1 || k == 4)
                    continue;   /* shared by every sender: received below */
                MPI_Status st;
                CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, MPI_ANY_SOURCE, tags[k], MPI_COMM_WORLD, &st));
                CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tags[k], "got (%d, %d), expected (%d, %d)",
                      st.MPI_SOURCE, st.MPI_TAG, src, tags[k]);
                CHECK(payload_check(buf, len_of(src, k), src, tags[k], 2) < 0, "round 2: wrong bytes");
            }
        }
        for (int src = 1; src < size; src++) {
            tags_of(src, tag_ub, tags);
            const int shared[3] = { 4, 1, 0 };
            for (int j = 0; j < 3; j++) {
                int k = shared[j];
                MPI_Status st;
                CHECK_MPI(MPI_Recv(buf, sizeof buf, MPI_BYTE, src, tags[k], MPI_COMM_WORLD, &st));
                CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tags[k], "got (%d, %d), expected (%d, %d)",
                      st.MPI_SOURCE, st.MPI_TAG, src, tags[k]);
                int count = -1;
                CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
                CHECK(count == (int)len_of(src, k), "round 2: count %d", count);
                CHECK(payload_check(buf, len_of(src, k), src, tags[k], 2) < 0, "round 2: wrong bytes");
            }
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
