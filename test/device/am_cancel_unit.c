/*
 * am_cancel_unit: the matching core's send cancel (am_core.c, "send
 * cancel"), driven message by message over a fake device, so that every
 * order the wire allows is tested deterministically. This process is rank 0
 * of 2; rank 1 is played by the test, which hands the core crafted messages
 * and reads what the core sent back.
 *
 * Receiver side: a cancel for a message that has not arrived (in flight, or
 * early in the stash) waits and drops the message on arrival; an unexpected
 * eager, synchronous, rendezvous or busy-pull message is removed (no ACK, no
 * FIN, no read); a busy pull being read is answered only after its read;
 * a matched or probed message gets no; later messages still match in order.
 * Sender side: eager (reopened after its local completion), rendezvous and
 * synchronous sends complete cancelled on yes, normally on no whatever the
 * order of the verdict and the protocol's own answers, and registrations,
 * cookies and rendezvous counts balance.
 */
#include "../../src/device/common/am_core.c"

#include <assert.h>
#include <stdarg.h>

/* ---- what am_core.c needs from the rest of Hashi ---- */
struct hashi_job hashi_job;
int hashi_log_level;
static int logs;
void hashi_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "core log: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    logs++;
}
/* Completion (request.h): the inline part sets `complete` itself and drops
 * the operation's reference (these requests are never destroyed); requests
 * with more to do come here. */
int hashi_refs_locked;
static int completions;
void hashi_request_complete_general(struct MPI_ABI_Request *req)
{
    atomic_store(&req->complete, 1);
    completions++;
}
void hashi_request_destroy(struct MPI_ABI_Request *req)
{
    (void)req;
}

/* ---- the fake device ---- */
#define RKEY 8
struct sent {
    int dest;
    int is_notice;
    uint64_t notice;
    struct am_hdr h;
};
static struct sent out[64];
static int nout;
static int regs, gets_started;
static hashi_am_done_fn get_done_fn;
static void *get_arg;

static int fake_send(int dest, const void *hdr, size_t hdr_len, const void *data, size_t len, unsigned flags,
                     hashi_am_done_fn done, void *arg)
{
    (void)data, (void)len, (void)flags;
    assert(nout < 64);
    memset(&out[nout], 0, sizeof out[nout]);
    out[nout].dest = dest;
    memcpy(&out[nout].h, hdr, hdr_len < sizeof(struct am_hdr) ? hdr_len : sizeof(struct am_hdr));
    nout++;
    if (done)
        done(arg, 0);
    return 0;
}
static int fake_notice(int dest, uint64_t value)
{
    assert(nout < 64);
    memset(&out[nout], 0, sizeof out[nout]);
    out[nout].dest = dest;
    out[nout].is_notice = 1;
    out[nout].notice = value;
    nout++;
    return 0;
}
static int fake_reg(void *buf, size_t len, int peer, void **mem, void *rkey)
{
    (void)buf, (void)len, (void)peer;
    memset(rkey, 0x5a, RKEY);
    *mem = (void *)(uintptr_t)0x1000;
    regs++;
    return 0;
}
static void fake_dereg(void *mem)
{
    (void)mem;
    regs--;
}
static int fake_get(int peer, void *local, size_t len, const void *rkey, uint64_t offset, hashi_am_done_fn done,
                    void *arg)
{
    (void)peer, (void)rkey, (void)offset;
    memset(local, 0x77, len);
    gets_started++;
    get_done_fn = done;   /* completed by the test */
    get_arg = arg;
    return 0;
}
static int fake_progress(void)
{
    return 0;
}
static const struct hashi_am_ops fake = {
    .name = "fake", .max_send = 4096, .flags = HASHI_AM_CAP_GET | HASHI_AM_CAP_NOTICE, .max_get = 1 << 20,
    .rkey_size = RKEY, .send = fake_send, .mem_reg = fake_reg, .mem_dereg = fake_dereg, .get = fake_get,
    .notice = fake_notice, .progress = fake_progress,
};

/* ---- helpers ---- */
#define CTX 5
#define FAIL(...) (fprintf(stderr, "am_cancel_unit:%d: ", __LINE__), fprintf(stderr, __VA_ARGS__), \
                   fprintf(stderr, "\n"), exit(1))
#define EXPECT(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

static uint32_t peer_seq;   /* rank 1's next sequence number towards us */

/* Rank 1 sends us a message of this type (EAGER: payload of len bytes). */
static void from_peer(uint8_t type, int tag, uint32_t seq, uint32_t cookie, uint64_t size, uint16_t flags)
{
    unsigned char msg[sizeof(struct am_hdr) + 64] = { 0 };
    struct am_hdr h = { .type = type, .flags = flags, .src_world = 1, .context_id = CTX, .source = 1, .tag = tag,
                        .seq = seq, .cookie = cookie, .size = size };
    if (type == AM_RTS)
        h.rkey_len = RKEY;
    memcpy(msg, &h, sizeof h);
    size_t len;
    if (type == AM_EAGER) {
        memset(msg + AM_SHORT_HDR, 0x33, (size_t)size);
        len = AM_SHORT_HDR + (size_t)size;
    } else if (type == AM_RTS) {
        memset(msg + sizeof h, 0x5a, RKEY);
        len = sizeof h + RKEY;
    } else {
        memset(msg + sizeof h, 0x44, (size_t)size);
        len = sizeof h + (type == AM_EAGER_SYNC ? (size_t)size : 0);
    }
    hashi_am_deliver(msg, len);
}

static void cancel_from_peer(int tag, uint32_t seq, uint32_t cookie)
{
    from_peer(AM_CANCEL, tag, seq, cookie, 0, 0);
}

/* The core's answers so far: how many of type (notices, by cookie). */
static int answers(uint8_t type, uint32_t cookie)
{
    int n = 0;
    for (int i = 0; i < nout; i++)
        if (out[i].is_notice && out[i].notice == notice_value(type, cookie))
            n++;
    return n;
}

static struct MPI_ABI_Request *new_req(void *buf, size_t bytes, int tag)
{
    struct MPI_ABI_Request *req = aligned_alloc(64, sizeof *req);
    memset(req, 0, sizeof *req);
    req->dev_buf = buf;
    req->dev_bytes = bytes;
    req->dest_world = 1;
    req->context_id = CTX;
    req->my_comm_rank = 0;
    req->tag = tag;
    req->match = (struct hashi_match){ .context_id = CTX, .source = 1, .tag = tag };
    return req;
}

static int probe(int tag)
{
    struct hashi_match m = { .context_id = CTX, .source = 1, .tag = tag };
    int flag = 0;
    struct hashi_envelope env;
    hashi_am_p2p_ops.iprobe(&m, &flag, &env);
    return flag;
}

static int complete(struct MPI_ABI_Request *req)
{
    return atomic_load(&req->complete);
}

/* A receive of tag that must take the eager message of len bytes now. */
static void recv_now(int tag, size_t len)
{
    unsigned char buf[64];
    struct MPI_ABI_Request *r = new_req(buf, sizeof buf, tag);
    EXPECT(hashi_am_p2p_ops.irecv(r) == MPI_SUCCESS, "irecv failed");
    EXPECT(complete(r), "the message on tag %d did not match", tag);
    EXPECT(hashi_status_bytes(&r->status) == len, "tag %d: %llu bytes", tag,
           (unsigned long long)hashi_status_bytes(&r->status));
    free(r);
}

/* ---- receiver side ---- */
static void receiver_cases(void)
{
    /* 1. Unexpected eager: removed, yes; the next one on the tag matches. */
    from_peer(AM_EAGER, 1, peer_seq++, 0, 16, 0);
    EXPECT(probe(1), "eager message not queued");
    cancel_from_peer(1, peer_seq - 1, 101);
    EXPECT(answers(AM_CANCEL_YES, 101) == 1, "unexpected eager: no yes");
    EXPECT(!probe(1), "unexpected eager: still queued after the cancel");
    from_peer(AM_EAGER, 1, peer_seq++, 0, 8, 0);
    recv_now(1, 8);

    /* 2. The cancel overtakes its message: it waits, the message is
     * dropped on arrival, the one after it arrives normally. */
    uint32_t s = peer_seq++;
    cancel_from_peer(2, s, 102);
    EXPECT(answers(AM_CANCEL_YES, 102) == 0 && answers(AM_CANCEL_NO, 102) == 0, "answered before the message came");
    from_peer(AM_EAGER, 2, s, 0, 16, 0);
    EXPECT(answers(AM_CANCEL_YES, 102) == 1, "in flight: no yes on arrival");
    EXPECT(!probe(2), "in flight: the cancelled message was queued");
    from_peer(AM_EAGER, 2, peer_seq++, 0, 4, 0);
    recv_now(2, 4);

    /* 3. The message is early in the stash (one before it is missing). */
    uint32_t a = peer_seq++, b = peer_seq++;
    from_peer(AM_EAGER, 3, b, 0, 12, 0);   /* early */
    cancel_from_peer(3, b, 103);
    EXPECT(answers(AM_CANCEL_YES, 103) == 0, "early: answered before its turn");
    from_peer(AM_EAGER, 3, a, 0, 6, 0);    /* a, then b replays and is dropped */
    EXPECT(answers(AM_CANCEL_YES, 103) == 1, "early: no yes at its turn");
    recv_now(3, 6);
    EXPECT(!probe(3), "early: the cancelled message was queued");

    /* 4. Matched (posted receive first): no. */
    unsigned char buf[64];
    struct MPI_ABI_Request *r = new_req(buf, sizeof buf, 4);
    hashi_am_p2p_ops.irecv(r);
    from_peer(AM_EAGER, 4, peer_seq++, 0, 10, 0);
    EXPECT(complete(r), "posted receive did not match");
    cancel_from_peer(4, peer_seq - 1, 104);
    EXPECT(answers(AM_CANCEL_NO, 104) == 1 && answers(AM_CANCEL_YES, 104) == 0, "matched: not a no");
    free(r);

    /* 5. Mprobed: matched too. */
    from_peer(AM_EAGER, 5, peer_seq++, 0, 10, 0);
    struct hashi_match m = { .context_id = CTX, .source = 1, .tag = 5 };
    int flag = 0;
    struct hashi_message *msg = NULL;
    hashi_am_p2p_ops.improbe(&m, &flag, NULL, &msg);
    EXPECT(flag, "improbe found nothing");
    cancel_from_peer(5, peer_seq - 1, 105);
    EXPECT(answers(AM_CANCEL_NO, 105) == 1, "mprobed: not a no");
    r = new_req(buf, sizeof buf, 5);
    hashi_am_p2p_ops.imrecv(r, msg);
    EXPECT(complete(r), "imrecv did not complete");
    free(r);

    /* 6. Unexpected synchronous eager: removed, and no ACK ever. */
    from_peer(AM_EAGER_SYNC, 6, peer_seq++, 206, 16, 0);
    cancel_from_peer(6, peer_seq - 1, 206);
    EXPECT(answers(AM_CANCEL_YES, 206) == 1, "sync: no yes");
    EXPECT(!probe(6), "sync: still queued");
    EXPECT(answers(AM_ACK, 206) == 0, "sync: an ACK went for a cancelled message");

    /* 7. Unexpected RTS: removed, never read. */
    int gets = gets_started;
    from_peer(AM_RTS, 7, peer_seq++, 207, 100000, 0);
    cancel_from_peer(7, peer_seq - 1, 207);
    EXPECT(answers(AM_CANCEL_YES, 207) == 1 && !probe(7), "RTS: not removed");
    EXPECT(gets_started == gets && answers(AM_FIN, 207) == 0, "RTS: read or FIN after the cancel");

    /* 8. Busy pull not read yet: removed from the unread list too. */
    from_peer(AM_RTS, 8, peer_seq++, 208, 1000, AM_PULL_NOW);
    EXPECT(hashi_am_unread_pulls == 1 && core.peers[1].pulls_in == 1, "pull: not on the unread list");
    cancel_from_peer(8, peer_seq - 1, 208);
    EXPECT(answers(AM_CANCEL_YES, 208) == 1 && !probe(8), "pull unread: not removed");
    EXPECT(hashi_am_unread_pulls == 0 && core.peers[1].pulls_in == 0, "pull unread: counts not released");
    EXPECT(hashi_am_core_idle() == 0, "pull unread: the idle pass still reads it");

    /* 9. Busy pull being read: out of the queue at once, answered (and no
     * FIN) only once the read is over. */
    from_peer(AM_RTS, 9, peer_seq++, 209, 1000, AM_PULL_NOW);
    EXPECT(hashi_am_core_idle() == 1 && gets_started == gets + 1, "pull: the idle pass did not read it");
    cancel_from_peer(9, peer_seq - 1, 209);
    EXPECT(!probe(9), "pulling: still matchable");
    EXPECT(answers(AM_CANCEL_YES, 209) == 0, "pulling: answered while the read runs");
    r = new_req(buf, sizeof buf, 9);
    hashi_am_p2p_ops.irecv(r);
    EXPECT(!complete(r), "pulling: a receive took the cancelled message");
    get_done_fn(get_arg, 0);
    EXPECT(answers(AM_CANCEL_YES, 209) == 1 && answers(AM_FIN, 209) == 0, "pulled: not a lone yes");
    EXPECT(core.peers[1].pulls_in == 0, "pulled: pulls_in not released");
    EXPECT(hashi_am_p2p_ops.cancel_recv(r) == 1, "the receive was not left posted");
    free(r);

    /* 10. A cancel of a message that came before the matched one in 4 etc.
     * leaves nothing behind. */
    EXPECT(core.peers[1].cancels == NULL && core.peers[1].early == NULL, "cancels or early arrivals left over");
    EXPECT(core.mq.unexp_count == 0 && core.mq.posted_count == 0, "queues not empty: %zu unexpected, %zu posted",
           core.mq.unexp_count, core.mq.posted_count);
}

/* ---- sender side ---- */
static void verdict(uint8_t type, uint32_t cookie)
{
    hashi_am_deliver_notice(1, notice_value(type, cookie));
}

/* The last CANCEL the core sent: its cookie (and it named seq). */
static uint32_t last_cancel(uint32_t seq)
{
    for (int i = nout - 1; i >= 0; i--)
        if (!out[i].is_notice && out[i].h.type == AM_CANCEL) {
            EXPECT(out[i].h.seq == seq, "CANCEL names message %u, expected %u", out[i].h.seq, seq);
            return out[i].h.cookie;
        }
    FAIL("no CANCEL was sent");
}

static void sender_cases(void)
{
    static unsigned char data[200000];
    uint32_t seq = core.peers[1].send_seq;

    /* Eager, complete at once; reopened by the MPI layer, cancelled: yes. */
    struct MPI_ABI_Request *e = new_req(data, 100, 11);
    EXPECT(hashi_am_p2p_ops.isend(e) == MPI_SUCCESS && complete(e), "eager send not complete at once");
    atomic_store(&e->complete, 0);   /* what p2p_cancel_send's reopen does */
    EXPECT(hashi_am_p2p_ops.cancel_send(e) == 1, "eager: not asked");
    uint32_t ck = last_cancel(seq);
    EXPECT(!complete(e), "eager: complete before the verdict");
    verdict(AM_CANCEL_YES, ck);
    EXPECT(complete(e) && hashi_status_cancelled(&e->status), "eager: not completed cancelled");
    EXPECT(hashi_cookie_get(&core.cookies, ck) == NULL, "eager: cookie not freed");
    free(e);

    /* Eager, verdict no: completes, not cancelled. */
    seq = core.peers[1].send_seq;
    e = new_req(data, 100, 12);
    hashi_am_p2p_ops.isend(e);
    atomic_store(&e->complete, 0);
    hashi_am_p2p_ops.cancel_send(e);
    verdict(AM_CANCEL_NO, last_cancel(seq));
    EXPECT(complete(e) && !hashi_status_cancelled(&e->status), "eager no: wrong outcome");
    free(e);

    /* Rendezvous: yes releases the registration and the rendezvous count. */
    int regs0 = regs;
    seq = core.peers[1].send_seq;
    struct MPI_ABI_Request *rv = new_req(data, sizeof data, 13);
    hashi_am_p2p_ops.isend(rv);
    EXPECT(regs == regs0 + 1 && core.peers[1].rndv_out == 1, "RTS: no registration");
    hashi_am_p2p_ops.cancel_send(rv);
    verdict(AM_CANCEL_YES, last_cancel(seq));
    EXPECT(complete(rv) && hashi_status_cancelled(&rv->status), "RTS yes: wrong outcome");
    EXPECT(regs == regs0 && core.peers[1].rndv_out == 0, "RTS yes: registration or count left");
    free(rv);

    /* Rendezvous, no then FIN; and FIN then no. */
    for (int fin_first = 0; fin_first < 2; fin_first++) {
        seq = core.peers[1].send_seq;
        rv = new_req(data, sizeof data, 14);
        hashi_am_p2p_ops.isend(rv);
        uint32_t rts_cookie = send_state(rv)->cookie;
        hashi_am_p2p_ops.cancel_send(rv);
        ck = last_cancel(seq);
        verdict(fin_first ? AM_FIN : AM_CANCEL_NO, fin_first ? rts_cookie : ck);
        EXPECT(!complete(rv), "RTS: complete after one of two answers");
        verdict(fin_first ? AM_CANCEL_NO : AM_FIN, fin_first ? ck : rts_cookie);
        EXPECT(complete(rv) && !hashi_status_cancelled(&rv->status), "RTS no: wrong outcome");
        EXPECT(regs == regs0 && core.peers[1].rndv_out == 0, "RTS no: registration or count left");
        free(rv);
    }

    /* Synchronous eager: yes ends the wait for the ACK; no waits for it. */
    seq = core.peers[1].send_seq;
    struct MPI_ABI_Request *sy = new_req(data, 100, 15);
    sy->send_mode = HASHI_SEND_SYNC;
    hashi_am_p2p_ops.isend(sy);
    EXPECT(!complete(sy), "sync: complete without ACK");
    hashi_am_p2p_ops.cancel_send(sy);
    verdict(AM_CANCEL_YES, last_cancel(seq));
    EXPECT(complete(sy) && hashi_status_cancelled(&sy->status), "sync yes: wrong outcome");
    free(sy);
    seq = core.peers[1].send_seq;
    sy = new_req(data, 100, 16);
    sy->send_mode = HASHI_SEND_SYNC;
    hashi_am_p2p_ops.isend(sy);
    uint32_t sync_cookie = send_state(sy)->cookie;
    hashi_am_p2p_ops.cancel_send(sy);
    verdict(AM_CANCEL_NO, last_cancel(seq));
    EXPECT(!complete(sy), "sync no: complete without ACK");
    verdict(AM_ACK, sync_cookie);
    EXPECT(complete(sy) && !hashi_status_cancelled(&sy->status), "sync no: wrong outcome");
    free(sy);
}

int main(void)
{
    hashi_job.rank = 0;
    hashi_job.size = 2;
    char err[256];
    if (hashi_am_core_init(&fake, 1024, HASHI_AM_RNDV_AUTO, err, sizeof err) != 0)
        FAIL("init: %s", err);
    receiver_cases();
    sender_cases();
    EXPECT(logs == 0, "the core logged %d complaints", logs);
    hashi_am_core_finalize();
    printf("am_cancel_unit ok\n");
    return 0;
}
