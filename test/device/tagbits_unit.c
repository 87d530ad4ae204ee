/*
 * Unit test of the ofi device's match bits (src/device/ofi/ofi_tagbits.h):
 * fields round-trip at their limits, wildcards ignore exactly their field,
 * protocol bits never change what matches, control messages and other
 * contexts never match an application receive. Uses the provider's rule
 * ((msg ^ bits) & ~ignore) == 0. Prints "tag bits ok".
 */
#include "device/ofi/ofi_tagbits.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tagbits_unit.c:%d: FAIL: ", line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}
#define CHECK(cond, ...) do { if (!(cond)) fail(__LINE__, __VA_ARGS__); } while (0)

static int matches(uint64_t msg, uint32_t ctx, int src, int tag)
{
    uint64_t bits, ignore;
    ofi_tb_recv(ctx, src, tag, &bits, &ignore);
    return ofi_tb_matches(msg, bits, ignore);
}

int main(void)
{
    const uint32_t ctxs[] = { 0, 1, 2, 0x7fff, OFI_MAX_CONTEXT };
    const int srcs[] = { 0, 1, 12345, OFI_MAX_SOURCE };
    const int tags[] = { 0, 1, 77, (1 << 23) - 1, OFI_TAG_UB };
    const uint64_t protos[] = { 0, OFI_TB_SYNC, OFI_TB_RNDV };

    CHECK(OFI_TAG_UB >= (1 << 23) - 1, "MPI needs tags up to 2^23-1, the device carries %d", OFI_TAG_UB);
    for (size_t c = 0; c < sizeof ctxs / sizeof *ctxs; c++)
        for (size_t s = 0; s < sizeof srcs / sizeof *srcs; s++)
            for (size_t t = 0; t < sizeof tags / sizeof *tags; t++)
                for (size_t p = 0; p < sizeof protos / sizeof *protos; p++) {
                    uint32_t ctx = ctxs[c];
                    int src = srcs[s], tag = tags[t];
                    uint64_t msg = ofi_tb_user(ctx, src, tag) | protos[p];
                    CHECK(!(msg & OFI_TB_CTRL), "application bits set the control bit");
                    CHECK(ofi_tb_context(msg) == ctx && ofi_tb_source(msg) == src && ofi_tb_tag(msg) == tag,
                          "(%u,%d,%d) decoded as (%u,%d,%d)", ctx, src, tag, ofi_tb_context(msg),
                          ofi_tb_source(msg), ofi_tb_tag(msg));
                    CHECK(matches(msg, ctx, src, tag), "exact receive missed (%u,%d,%d) proto %#llx", ctx, src,
                          tag, (unsigned long long)protos[p]);
                    CHECK(matches(msg, ctx, MPI_ANY_SOURCE, tag), "ANY_SOURCE missed");
                    CHECK(matches(msg, ctx, src, MPI_ANY_TAG), "ANY_TAG missed");
                    CHECK(matches(msg, ctx, MPI_ANY_SOURCE, MPI_ANY_TAG), "ANY/ANY missed");
                    /* Neighbouring values in each field must not match. */
                    CHECK(!matches(msg, ctx ^ 1, MPI_ANY_SOURCE, MPI_ANY_TAG), "another context matched");
                    CHECK(!matches(msg, ctx, src ^ 1, MPI_ANY_TAG), "another source matched");
                    CHECK(!matches(msg, ctx, MPI_ANY_SOURCE, tag ^ 1), "another tag matched");
                    CHECK(!matches(msg, ctx, src ^ (1 << 19), tag), "source bit 19 ignored");
                    CHECK(!matches(msg, ctx, src, tag ^ (1 << 23)), "tag bit 23 ignored");
                }

    /* Control messages never match an application receive, wildcards or not. */
    uint64_t ctrl_types[] = { OFI_CTRL_ACK, OFI_CTRL_FIN, OFI_CTRL_SELFTEST, OFI_CTRL_CANCEL, OFI_CTRL_CANCEL_NO,
                              OFI_CTRL_CANCEL_YES };
    size_t ntypes = sizeof ctrl_types / sizeof *ctrl_types;
    for (size_t i = 0; i < ntypes; i++) {
        uint64_t ctrl = ofi_tb_ctrl((enum ofi_ctrl_type)ctrl_types[i], OFI_MAX_CTRL_WORLD, 0xffffffffu);
        CHECK(ctrl & OFI_TB_CTRL, "control bits lack the control bit");
        for (size_t c = 0; c < sizeof ctxs / sizeof *ctxs; c++)
            CHECK(!matches(ctrl, ctxs[c], MPI_ANY_SOURCE, MPI_ANY_TAG), "a control message matched a receive");
        /* Distinct (type, world, cookie) give distinct bits. */
        CHECK(ofi_tb_ctrl(OFI_CTRL_ACK, 3, 7) != ofi_tb_ctrl(OFI_CTRL_FIN, 3, 7), "ACK and FIN collide");
        CHECK(ofi_tb_ctrl(OFI_CTRL_ACK, 3, 7) != ofi_tb_ctrl(OFI_CTRL_ACK, 4, 7), "worlds collide");
        CHECK(ofi_tb_ctrl(OFI_CTRL_ACK, 3, 7) != ofi_tb_ctrl(OFI_CTRL_ACK, 3, 8), "cookies collide");
    }
    /* The CANCEL listener (any world, any cookie) takes CANCELs only; the
     * sender's verdict receive both verdicts of its own (peer, cookie) only. */
    for (size_t i = 0; i < ntypes; i++) {
        enum ofi_ctrl_type t = (enum ofi_ctrl_type)ctrl_types[i];
        uint64_t msg = ofi_tb_ctrl(t, OFI_MAX_CTRL_WORLD, 0xfffffffeu);
        CHECK(ofi_tb_ctrl_type(msg) == t && ofi_tb_ctrl_world(msg) == OFI_MAX_CTRL_WORLD,
              "type or world of a control message read back wrong");
        CHECK(ofi_tb_matches(msg, ofi_tb_ctrl(OFI_CTRL_CANCEL, 0, 0), OFI_TB_CTRL_PEER_MASK) == (t == OFI_CTRL_CANCEL),
              "the CANCEL listener and control type %d", (int)t);
        uint64_t verdict = ofi_tb_ctrl(OFI_CTRL_CANCEL_NO, OFI_MAX_CTRL_WORLD, 0xfffffffeu);
        int is_verdict = t == OFI_CTRL_CANCEL_NO || t == OFI_CTRL_CANCEL_YES;
        CHECK(ofi_tb_matches(msg, verdict, OFI_TB_CTRL_VERDICT_BIT) == is_verdict,
              "the verdict receive and control type %d", (int)t);
        CHECK(!ofi_tb_matches(ofi_tb_ctrl(t, 5, 0xfffffffeu), verdict, OFI_TB_CTRL_VERDICT_BIT) &&
              !ofi_tb_matches(ofi_tb_ctrl(t, OFI_MAX_CTRL_WORLD, 1), verdict, OFI_TB_CTRL_VERDICT_BIT),
              "a verdict for another peer or cookie matched");
    }
    CHECK(ofi_tb_ctrl(OFI_CTRL_ACK, OFI_MAX_CTRL_WORLD, 0) >> 32 ==
              ((OFI_TB_CTRL | (uint64_t)OFI_CTRL_ACK << 60) >> 32 | (uint64_t)OFI_MAX_CTRL_WORLD),
          "the largest world rank overflows its field");
    printf("tag bits ok\n");
    return 0;
}
