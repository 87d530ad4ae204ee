/*
 * fortran_abi: the standard ABI's hooks for a separately built Fortran
 * binding. Before MPI_Init: nothing is set (MPI_INFO_NULL, is_set false),
 * then .TRUE. = -1 / .FALSE. = 0 for 4-byte LOGICALs (as some compilers
 * use). After it: MPI_LAND / LOR / LXOR on MPI_LOGICAL across the ranks
 * read "not .FALSE." as true and write -1 and 0; MPI_LOGICAL1, not set,
 * keeps 1 and 0; sizes that disagree with Hashi's types are MPI_ERR_ABI;
 * the info is set once and read back; bad sizes are MPI_ERR_ARG.
 * Run with 2 or more ranks (one rank's reduction applies no op). Prints
 * "rank R of S fortran abi ok".
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../util/check.h"

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;
    CHECK(rc != MPI_SUCCESS, "%s succeeded", what);
    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == want, "%s: class %d, expected %d", what, cls, want);
}

int main(int argc, char **argv)
{
    MPI_Info info = (MPI_Info)(void *)&info;
    int32_t t = 7, f = 7;
    int is_set = -1;
    CHECK_MPI(MPI_Abi_get_fortran_info(&info));
    CHECK(info == MPI_INFO_NULL, "Fortran info before anything set");
    CHECK_MPI(MPI_Abi_get_fortran_booleans(4, &t, &f, &is_set));
    CHECK(is_set == 0 && t == 7 && f == 7, "booleans before anything set: is_set %d", is_set);
    int32_t minus_one = -1, zero = 0;
    CHECK_MPI(MPI_Abi_set_fortran_booleans(4, &minus_one, &zero));
    CHECK_MPI(MPI_Abi_set_fortran_booleans(4, &minus_one, &zero));   /* the same again */

    int rank, size;
    CHECK_MPI(MPI_Init(&argc, &argv));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK(size >= 2, "run with 2 or more ranks");

    CHECK_MPI(MPI_Abi_get_fortran_booleans(4, &t, &f, &is_set));
    CHECK(is_set == 1 && t == -1 && f == 0, "booleans read back: %d %d (set %d)", t, f, is_set);
    int32_t one = 1;
    expect_class(MPI_Abi_set_fortran_booleans(4, &one, &zero), MPI_ERR_ABI, "other booleans for 4 bytes");
    expect_class(MPI_Abi_set_fortran_booleans(3, &one, &zero), MPI_ERR_ARG, "booleans of 3 bytes");
    expect_class(MPI_Abi_set_fortran_booleans(4, &one, &one), MPI_ERR_ARG, "equal booleans");
    expect_class(MPI_Abi_get_fortran_booleans(6, &t, &f, &is_set), MPI_ERR_ARG, "get booleans of 6 bytes");

    /* [all true (5 counts: not .FALSE.), only this rank false, only rank 0 true, all false] */
    int32_t in[4] = { rank == 0 ? 5 : -1, 0, rank == 0 ? -1 : 0, 0 }, out[4];
    in[1] = rank == size - 1 ? 0 : -1;
    CHECK_MPI(MPI_Allreduce(in, out, 4, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD));
    int32_t land[4] = { -1, 0, 0, 0 };
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == land[i], "LAND on LOGICAL [%d] = %d, expected %d", i, out[i], land[i]);
    CHECK_MPI(MPI_Allreduce(in, out, 4, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD));
    int32_t lor[4] = { -1, -1, -1, 0 };
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == lor[i], "LOR on LOGICAL [%d] = %d, expected %d", i, out[i], lor[i]);
    CHECK_MPI(MPI_Allreduce(in, out, 4, MPI_LOGICAL, MPI_LXOR, MPI_COMM_WORLD));
    int32_t lxor[4] = { size % 2 ? -1 : 0, (size - 1) % 2 ? -1 : 0, -1, 0 };
    for (int i = 0; i < 4; i++)
        CHECK(out[i] == lxor[i], "LXOR on LOGICAL [%d] = %d, expected %d", i, out[i], lxor[i]);

    /* 1-byte LOGICALs were not set: 1 and 0. */
    int8_t b_in[2] = { (int8_t)(rank + 2), 0 }, b_out[2];
    CHECK_MPI(MPI_Allreduce(b_in, b_out, 2, MPI_LOGICAL1, MPI_LAND, MPI_COMM_WORLD));
    CHECK(b_out[0] == 1 && b_out[1] == 0, "LAND on LOGICAL1: %d %d", b_out[0], b_out[1]);

    /* Sizes: an 8-byte INTEGER is refused; Hashi's own sizes are taken once. */
    MPI_Info wrong, right, got;
    CHECK_MPI(MPI_Info_create(&wrong));
    CHECK_MPI(MPI_Info_set(wrong, "mpi_integer_size", "8"));
    expect_class(MPI_Abi_set_fortran_info(wrong), MPI_ERR_ABI, "an 8-byte default INTEGER");
    CHECK_MPI(MPI_Info_set(wrong, "mpi_integer_size", "four"));
    expect_class(MPI_Abi_set_fortran_info(wrong), MPI_ERR_ARG, "a size that is not a number");
    expect_class(MPI_Abi_set_fortran_info(MPI_INFO_NULL), MPI_ERR_INFO, "MPI_INFO_NULL");
    CHECK_MPI(MPI_Info_free(&wrong));
    CHECK_MPI(MPI_Info_create(&right));
    CHECK_MPI(MPI_Info_set(right, "mpi_integer_size", "4"));
    CHECK_MPI(MPI_Info_set(right, "mpi_double_precision_size", "8"));
    CHECK_MPI(MPI_Info_set(right, "mpi_integer8_supported", "true"));
    CHECK_MPI(MPI_Abi_set_fortran_info(right));
    expect_class(MPI_Abi_set_fortran_info(right), MPI_ERR_ABI, "setting the info twice");
    CHECK_MPI(MPI_Info_free(&right));
    CHECK_MPI(MPI_Abi_get_fortran_info(&got));
    CHECK(got != MPI_INFO_NULL, "the Fortran info was not kept");
    char value[16];
    int len = sizeof value, flag = 0;
    CHECK_MPI(MPI_Info_get_string(got, "mpi_integer8_supported", &len, value, &flag));
    CHECK(flag && strcmp(value, "true") == 0, "mpi_integer8_supported read back as '%s'", flag ? value : "");
    CHECK_MPI(MPI_Info_free(&got));

    CHECK_MPI(MPI_Finalize());
    printf("rank %d of %d fortran abi ok\n", rank, size);
    return 0;
}
