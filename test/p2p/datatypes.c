/*
 * datatypes: non-contiguous data both ways. A column of a row-major matrix
 * (MPI_Type_vector of doubles) is received as contiguous doubles, sent back
 * as contiguous doubles and received into a column of another matrix; count
 * > 1 of a vector type; a struct of mixed types; a vector with a resized
 * extent; MPI_Get_count / Get_elements in the receiver's type, also for a
 * message that ends inside an element. Small and large (rendezvous) shapes.
 * Pairs (0,1), (2,3) ...
 */
#include "p2p_util.h"

#include <stddef.h>

struct record {
    int id;
    double value;
    char name[5];
};

static double cell(int who, int row, int col)
{
    return who * 1e6 + row * 1000.0 + col + 0.25;
}

static void column_exchange(int rank, int partner, int rows, int cols)
{
    double *matrix = malloc(sizeof(double) * (size_t)rows * (size_t)cols);
    double *column = malloc(sizeof(double) * (size_t)rows);
    MPI_Datatype col_type;
    CHECK_MPI(MPI_Type_vector(rows, 1, cols, MPI_DOUBLE, &col_type));
    CHECK_MPI(MPI_Type_commit(&col_type));
    int c = cols / 2;
    MPI_Status st;
    int count = -1;

    if (rank % 2 == 0) {
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < cols; k++)
                matrix[(size_t)r * cols + k] = cell(rank, r, k);
        /* Column out as a vector; it comes back as contiguous doubles that the
         * partner negated, into column 0 of a cleared matrix. */
        CHECK_MPI(MPI_Send(&matrix[c], 1, col_type, partner, 1, MPI_COMM_WORLD));
        for (size_t i = 0; i < (size_t)rows * cols; i++)
            matrix[i] = -1;
        CHECK_MPI(MPI_Recv(&matrix[0], 1, col_type, partner, 2, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, col_type, &count));
        CHECK(count == 1, "column back: MPI_Get_count %d in the vector type", count);
        CHECK_MPI(MPI_Get_elements(&st, col_type, &count));
        CHECK(count == rows, "column back: MPI_Get_elements %d, expected %d", count, rows);
        for (int r = 0; r < rows; r++) {
            for (int k = 0; k < cols; k++) {
                double want = k == 0 ? -cell(rank, r, c) : -1;
                CHECK(matrix[(size_t)r * cols + k] == want, "%dx%d: matrix[%d][%d] = %g, expected %g", rows, cols,
                      r, k, matrix[(size_t)r * cols + k], want);
            }
        }
    } else {
        CHECK_MPI(MPI_Recv(column, rows, MPI_DOUBLE, partner, 1, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE, &count));
        CHECK(count == rows, "column as doubles: count %d, expected %d", count, rows);
        for (int r = 0; r < rows; r++) {
            CHECK(column[r] == cell(partner, r, c), "%dx%d: column[%d] = %g", rows, cols, r, column[r]);
            column[r] = -column[r];
        }
        CHECK_MPI(MPI_Send(column, rows, MPI_DOUBLE, partner, 2, MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Type_free(&col_type));
    free(matrix);
    free(column);
}

int main(int argc, char **argv)
{
    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    int partner = (rank ^ 1) < size ? rank ^ 1 : MPI_PROC_NULL;

    if (partner != MPI_PROC_NULL) {
        column_exchange(rank, partner, 10, 7);
        column_exchange(rank, partner, 50000, 3);   /* 400 KB of column data */

        /* Count 3 of a strided pair type, received as 6 contiguous ints,
         * and a message ending inside an element: Get_count undefined,
         * Get_elements the ints that arrived. */
        MPI_Datatype pair;
        CHECK_MPI(MPI_Type_vector(2, 1, 3, MPI_INT, &pair));   /* ints 0 and 3, extent 4 ints */
        CHECK_MPI(MPI_Type_commit(&pair));
        if (rank % 2 == 0) {
            int src[12];
            for (int i = 0; i < 12; i++)
                src[i] = rank * 100 + i;
            /* 3 elements from extent 4 ints each: src[0],src[3],src[4],src[7],src[8],src[11] */
            CHECK_MPI(MPI_Send(src, 3, pair, partner, 3, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Send(src, 5, MPI_INT, partner, 4, MPI_COMM_WORLD));
        } else {
            int dst[6] = { 0 };
            MPI_Status st;
            CHECK_MPI(MPI_Recv(dst, 6, MPI_INT, partner, 3, MPI_COMM_WORLD, &st));
            const int want[6] = { 0, 3, 4, 7, 8, 11 };
            for (int i = 0; i < 6; i++)
                CHECK(dst[i] == partner * 100 + want[i], "pair type: dst[%d] = %d", i, dst[i]);
            int into[12];
            for (int i = 0; i < 12; i++)
                into[i] = -7;
            CHECK_MPI(MPI_Recv(into, 3, pair, partner, 4, MPI_COMM_WORLD, &st));
            int count = 0, elements = 0;
            CHECK_MPI(MPI_Get_count(&st, pair, &count));
            CHECK_MPI(MPI_Get_elements(&st, pair, &elements));
            CHECK(count == MPI_UNDEFINED && elements == 5, "5 ints into the pair type: count %d, elements %d",
                  count, elements);
            /* The 5 ints land at 0,3,4,7,8; the rest stays. */
            const int at[5] = { 0, 3, 4, 7, 8 };
            for (int i = 0, k = 0; i < 12; i++) {
                if (k < 5 && i == at[k]) {
                    CHECK(into[i] == partner * 100 + k, "partial pair receive: into[%d] = %d", i, into[i]);
                    k++;
                } else {
                    CHECK(into[i] == -7, "partial pair receive wrote into[%d]", i);
                }
            }
        }
        CHECK_MPI(MPI_Type_free(&pair));

        /* A struct of mixed types, two records at once. */
        struct record recs[2];
        int blocklens[3] = { 1, 1, 5 };
        MPI_Aint displs[3] = { offsetof(struct record, id), offsetof(struct record, value),
                               offsetof(struct record, name) };
        MPI_Datatype types[3] = { MPI_INT, MPI_DOUBLE, MPI_CHAR }, rec_type;
        CHECK_MPI(MPI_Type_create_struct(3, blocklens, displs, types, &rec_type));
        MPI_Datatype rec_resized;
        CHECK_MPI(MPI_Type_create_resized(rec_type, 0, sizeof(struct record), &rec_resized));
        CHECK_MPI(MPI_Type_commit(&rec_resized));
        if (rank % 2 == 0) {
            for (int i = 0; i < 2; i++) {
                memset(&recs[i], 0, sizeof recs[i]);
                recs[i].id = rank + i;
                recs[i].value = 2.5 * (i + 1);
                memcpy(recs[i].name, i ? "beta" : "alfa", 5);
            }
            CHECK_MPI(MPI_Send(recs, 2, rec_resized, partner, 5, MPI_COMM_WORLD));
        } else {
            memset(recs, 0x33, sizeof recs);
            MPI_Status st;
            CHECK_MPI(MPI_Recv(recs, 2, rec_resized, partner, 5, MPI_COMM_WORLD, &st));
            for (int i = 0; i < 2; i++)
                CHECK(recs[i].id == partner + i && recs[i].value == 2.5 * (i + 1) &&
                      strcmp(recs[i].name, i ? "beta" : "alfa") == 0, "record %d: %d %g %.5s", i, recs[i].id,
                      recs[i].value, recs[i].name);
            int elements = 0;
            CHECK_MPI(MPI_Get_elements(&st, rec_resized, &elements));
            CHECK(elements == 14, "two records: MPI_Get_elements %d, expected 14", elements);
        }
        CHECK_MPI(MPI_Type_free(&rec_type));
        CHECK_MPI(MPI_Type_free(&rec_resized));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    report_ok();
    CHECK_MPI(MPI_Finalize());
    return 0;
}
