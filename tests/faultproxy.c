/* SPDX-License-Identifier: Apache-2.0 */
/*
 * faultproxy - a fault-injecting TCP proxy for the libzklock tests.
 *
 *   faultproxy TARGET_HOST:TARGET_PORT [LISTEN_PORT [LISTEN_ADDR]]
 *
 * Listens on LISTEN_ADDR:LISTEN_PORT (an IPv4 address, default 127.0.0.1;
 * any of 127.0.0.0/8 is loopback too; port default 0: the kernel picks),
 * prints "PORT <n>" on stdout, then forwards every accepted connection to
 * TARGET (host name, IPv4 address, or [IPv6]:port; resolved once at start,
 * every address is tried in turn).  One thread, one poll() loop, nonblocking
 * sockets, one 64 KiB buffer per direction and connection.
 *
 * Control: one command per line on stdin; each is answered on stdout with
 * exactly one line, "ok", "ok <details>" or "err <why>", written after the
 * command has taken effect.  Blank lines are ignored (no answer).
 *
 *   pass              forward normally (initial mode); ends a drop or a hold.
 *                     Ending
 *                     a drop answers "ok reset=<r> resumed=<m>".  A pair
 *                     goes on (is "resumed") if the drop discarded nothing
 *                     but whole pings and ping replies (xid -2) on it: that
 *                     is what a short real partition looks like to
 *                     ZooKeeper.  A pair that lost anything else (a request,
 *                     a reply, a watch event, part of a packet, unparsable
 *                     bytes) or lost a side is reset on both sides, since
 *                     TCP never delivers a stream with such a hole.
 *                     Connections accepted during the drop are connected to
 *                     the target now, with the bytes their clients sent
 *                     meanwhile.
 *   drop              black hole: every socket stays open and is still read,
 *                     but the bytes are discarded (data buffered and not yet
 *                     written is discarded too).  New connections are
 *                     accepted (connect succeeds) but nothing comes back:
 *                     they are held, their bytes kept (up to 64 KiB) and not
 *                     discarded, and connected to the target only on
 *                     "pass" (a ZooKeeper client that reconnects during a
 *                     partition gets through as soon as it heals).  A side
 *                     that closes or fails during a drop is not reported to
 *                     the other side until "pass".
 *   hold              hold back what the servers send: their bytes are read
 *                     and kept (up to 64 KiB per connection), not written to
 *                     the clients, until "pass", which writes them then, in
 *                     order: nothing is lost, so no pair is reset.  What the
 *                     clients send goes on to the servers meanwhile.  So a
 *                     reply comes late (after the client did something
 *                     else meanwhile: a cancel, say) on a connection that
 *                     stays up.  A client that hears nothing for 2/3 of its
 *                     session timeout gives the connection up: hold for
 *                     less.
 *   reset             close every open pair at once with an RST on both sides
 *                     ("ok closed=<n>").  New connections are served in the
 *                     current mode (normally: forwarded).
 *   refuse / accept   refuse: new connection attempts fail fast (the
 *                     listening socket stops listening, so connect() gets
 *                     ECONNREFUSED; where that is impossible, connections are
 *                     accepted and reset at once).  accept: listen again on
 *                     the same port.  Open pairs are not touched.
 *   reset-after-op N  arm a one-shot trigger: as soon as a client request
 *   drop-after-op N   with opcode N has been completely written to the server,
 *   hold-after-op N   do "reset" (resp. "drop", "hold") right then.  The
 *                     answer "ok" means armed; when the trigger fires, the line
 *                     "fired op N" is printed ASYNCHRONOUSLY (it may come
 *                     before the answer to a later command).  While armed,
 *                     client->server bytes are written one request at a time
 *                     so nothing after the request gets through.  For the
 *                     reset trigger the client side gets the RST, while the
 *                     server side of that connection stays open, its bytes
 *                     discarded, until the server has answered the request
 *                     (or closed, or 10 s passed), and is then closed
 *                     normally.  Connections accepted meanwhile are held and
 *                     reach the server only after that: the request is sure
 *                     to be carried out before the client can reconnect.  (A
 *                     ZooKeeper server discards the unread requests of a
 *                     session's old connection when the session reconnects,
 *                     so without the wait the reconnect could overtake the
 *                     request.)  Arming again replaces the previous trigger.
 *   disarm            cancel an armed trigger.
 *   stats             "ok conns=<open pairs> accepted=<pairs ever made>
 *                      c2s=<bytes written to servers> s2c=<bytes written to
 *                      clients> dropped=<bytes discarded> fired=<n>"
 *   quit              answer "ok", close everything, exit 0.
 *
 * EOF on stdin is a quit; SIGTERM/SIGINT exit cleanly (status 0).
 *
 * ZooKeeper framing (jute, big-endian): every packet is an int32 length and
 * that many bytes.  On client->server streams the first packet is the
 * ConnectRequest, every later one starts with {int32 xid; int32 type}; on
 * server->client streams the first is the ConnectResponse, every later one
 * starts with {int32 xid; int64 zxid; int32 err}.  Both directions are parsed
 * as they are written (or discarded), so the trigger sees what the server
 * sees; a negative or absurd length (e.g. a four-letter word) stops parsing
 * for that connection.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define BUFCAP (64u * 1024u)
#define MAX_PACKET (64u * 1024u * 1024u)
#define READ_QUOTA (4u * BUFCAP) /* bytes read per side per wakeup */
#define CTL_MAX 1024
#define BACKLOG 128

enum { C = 0, S = 1 };           /* the two sides of a pair */
enum { ARM_NONE, ARM_RESET, ARM_DROP, ARM_HOLD };

struct side {
    int fd;                      /* -1 once closed */
    unsigned rd_eof : 1;         /* peer's FIN has been read */
    unsigned wr_shut : 1;        /* we sent our FIN */
    unsigned dead : 1;           /* failed/closed; no more I/O */
    unsigned hup : 1;            /* poll reported POLLHUP */
};

struct buf {                     /* bytes [start, end) wait to be written */
    size_t start, end;
    unsigned char data[BUFCAP];
};

struct framer {                  /* jute framing of one direction */
    unsigned char lenb[4];
    unsigned lenhave;            /* bytes of the length field seen */
    uint32_t len;                /* body length of the current packet */
    uint32_t have;               /* body bytes seen */
    unsigned char hdr[8];        /* first 8 body bytes: xid, type */
    int seen_first;              /* Connect{Request,Response} done */
    int desync;                  /* gave up parsing */
    int pkt_fwd, pkt_disc;       /* current packet partly forwarded/discarded */
};

struct pair {
    struct side sd[2];
    struct buf b[2];             /* b[X]: read from side X, to be written to !X */
    struct framer fr[2];         /* fr[C]: client->server, fr[S]: server->client */
    const struct addrinfo *ai_next; /* next target address to try */
    int connecting;              /* nonblocking connect to target underway */
    int held;                    /* accepted during a drop: client bytes are
                                    kept, the target is not connected yet */
    int dirty;                   /* a drop discarded more than whole pings and
                                    ping replies: reset on "pass" */
    int closed;                  /* both fds closed; freed by the sweep */
};

static struct addrinfo *g_ai;
static struct pair **g_pairs;
static size_t g_npairs, g_cappairs;
static int g_lfd = -1;
static int g_lport;
static struct in_addr g_laddr;     /* where to listen (127.0.0.1) */
static int g_drop;
static int g_hold;               /* server->client bytes kept until "pass" */
static int g_refuse;             /* refusing new connections */
static int g_refuse_unlistened;  /* ... by having stopped listening */
static int g_arm = ARM_NONE;
static int32_t g_arm_op;
static int g_fire_pending;
static struct pair *g_fire_pair;  /* the pair whose request fired */
static int32_t g_fire_xid;        /* ... and that request's xid */
/* After a reset trigger: the fired connection's server side, open until
 * the server answers the request (see "reset-after-op"). */
static struct pair g_settle;      /* only sd[S] and fr[S] are used */
static int g_settle_active, g_settle_done;
static struct timespec g_settle_deadline;
static int g_quit;
static struct timespec g_accept_resume; /* accept paused (EMFILE) until */
static int g_accept_paused;
static unsigned long long st_accepted, st_c2s, st_s2c, st_dropped, st_fired;
static volatile sig_atomic_t g_sig;
static unsigned char g_scratch[BUFCAP];
static char g_ctl[CTL_MAX];
static size_t g_ctl_len;
static int g_ctl_overflow;

static void cleanup(void);

/* ---------- output ---------- */

static void out_line(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    size_t off = 0;
    while (off < (size_t)n) {
        ssize_t w = write(STDOUT_FILENO, line + off, (size_t)n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            /* nobody listens any more: leave */
            cleanup();
            exit(1);
        }
        off += (size_t)w;
    }
}

/* ---------- small helpers ---------- */

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void set_nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void close_rst(int fd)
{
    struct linger lg = { 1, 0 };
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    close(fd);
}

static size_t buf_len(const struct buf *b) { return b->end - b->start; }

static void buf_discard(struct buf *b)
{
    st_dropped += buf_len(b);
    b->start = b->end = 0;
}

/* ---------- framing ---------- */

#define PING_XID (-2)

static void framer_packet_done(struct pair *p, int x)
{
    struct framer *f = &p->fr[x];
    int first = !f->seen_first;
    f->seen_first = 1;
    if (f->pkt_disc) {
        /* Losing a whole ping or ping reply is harmless (it is what a short
         * partition does); losing anything else, or part of a packet, is
         * not. */
        if (f->pkt_fwd || first || f->len < 8 || (int32_t)be32(f->hdr) != PING_XID)
            p->dirty = 1;
    } else if (x == C && !first && f->len >= 8) {
        int32_t type = (int32_t)be32(f->hdr + 4);
        if (g_arm != ARM_NONE && type == g_arm_op) {
            g_fire_pending = 1;
            g_fire_pair = p;
            g_fire_xid = (int32_t)be32(f->hdr);
        }
    } else if (p == &g_settle && x == S && !first && f->len >= 4 &&
               (int32_t)be32(f->hdr) == g_fire_xid) {
        g_settle_done = 1;       /* the server answered the fired request */
    }
    f->lenhave = 0;
    f->len = 0;
    f->have = 0;
    f->pkt_fwd = f->pkt_disc = 0;
}

/* The next n bytes of direction x (read from side x) were forwarded
 * (discarded == 0) or thrown away (discarded == 1). */
static void framer_feed(struct pair *p, int x, const unsigned char *d, size_t n, int discarded)
{
    struct framer *f = &p->fr[x];
    while (n > 0 && !f->desync) {
        if (discarded)
            f->pkt_disc = 1;
        else
            f->pkt_fwd = 1;
        if (f->lenhave < 4) {
            f->lenb[f->lenhave++] = *d++;
            n--;
            if (f->lenhave == 4) {
                uint32_t l = be32(f->lenb);
                if (l > MAX_PACKET) { /* negative or absurd */
                    f->desync = 1;
                    break;
                }
                f->len = l;
                f->have = 0;
                if (l == 0)
                    framer_packet_done(p, x);
            }
            continue;
        }
        size_t take = f->len - f->have;
        if (take > n)
            take = n;
        for (size_t i = 0; f->have + i < 8 && i < take; i++)
            f->hdr[f->have + i] = d[i];
        f->have += (uint32_t)take;
        d += take;
        n -= take;
        if (f->have == f->len)
            framer_packet_done(p, x);
    }
    if (f->desync && discarded)
        p->dirty = 1;     /* can't tell what was lost */
}

/* How many of the n bytes at d (the next bytes of the stream) may be written
 * so that the write ends no later than the end of the current packet. */
static size_t framer_limit(const struct framer *f, const unsigned char *d, size_t n)
{
    if (f->desync)
        return n;
    if (f->lenhave == 4) {
        size_t rest = f->len - f->have;
        return rest < n ? rest : n;
    }
    unsigned char lb[4];
    unsigned have = f->lenhave;
    size_t i = 0;
    memcpy(lb, f->lenb, have);
    while (have < 4 && i < n)
        lb[have++] = d[i++];
    if (have < 4)
        return n;
    uint32_t l = be32(lb);
    if (l > MAX_PACKET)
        return n;
    return (size_t)l <= n - i ? i + l : n;
}

/* ---------- pairs ---------- */

static void side_close(struct pair *p, int x, int rst)
{
    struct side *s = &p->sd[x];
    if (s->fd >= 0) {
        if (rst)
            close_rst(s->fd);
        else
            close(s->fd);
        s->fd = -1;
    }
    s->dead = 1;
}

static void pair_kill(struct pair *p, int rst_c, int rst_s)
{
    if (p->closed)
        return;
    buf_discard(&p->b[C]);
    buf_discard(&p->b[S]);
    side_close(p, C, rst_c);
    side_close(p, S, rst_s);
    p->connecting = 0;
    p->closed = 1;
}

static size_t open_pairs(void)
{
    size_t n = 0;
    for (size_t i = 0; i < g_npairs; i++)
        if (!g_pairs[i]->closed)
            n++;
    return n;
}

/* Discard what the peer already sent us, so that a normal close() sends a
 * FIN rather than an RST (Linux resets when unread data is left). */
static void drain(int fd)
{
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(fd, g_scratch, sizeof g_scratch, MSG_DONTWAIT);
        if (n > 0)
            st_dropped += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return;
    }
}

/* Close every open pair; the client side always with an RST, the server
 * side with an RST too, or (rst_server == 0) normally, after the data. */
static int reset_all(int rst_server)
{
    int n = 0;
    for (size_t i = 0; i < g_npairs; i++) {
        struct pair *p = g_pairs[i];
        if (!p->closed) {
            if (!rst_server && p->sd[S].fd >= 0 && !p->connecting)
                drain(p->sd[S].fd);
            pair_kill(p, 1, rst_server);
            n++;
        }
    }
    return n;
}

static void enter_drop(void)
{
    g_drop = 1;
    for (size_t i = 0; i < g_npairs; i++) {
        struct pair *p = g_pairs[i];
        if (p->closed || p->held)
            continue;
        for (int x = C; x <= S; x++) {
            struct buf *b = &p->b[x];
            framer_feed(p, x, b->data + b->start, buf_len(b), 1);
            buf_discard(b);
        }
    }
}

static void pair_update(struct pair *p);
static int pair_connect(struct pair *p);
static void side_error(struct pair *p, int x);

/* End of a drop: pairs that lost bytes are reset (TCP never delivers a
 * stream with a hole), held pairs get their target connection. */
static void leave_drop(int *nreset, int *nresumed)
{
    g_drop = 0;
    *nreset = *nresumed = 0;
    for (size_t i = 0; i < g_npairs; i++) {
        struct pair *p = g_pairs[i];
        if (p->closed)
            continue;
        if (p->fr[C].pkt_disc || p->fr[S].pkt_disc)
            p->dirty = 1;  /* a packet's head was lost, its tail would pass */
        if (p->dirty || p->sd[C].dead || p->sd[S].dead) {
            pair_kill(p, 1, 1);
            (*nreset)++;
            continue;
        }
        if (p->held) {
            p->held = 0;
            p->ai_next = g_ai;
            if (pair_connect(p) < 0) {
                side_error(p, S);
                (*nreset)++;
                continue;
            }
        }
        (*nresumed)++;
        pair_update(p);
    }
}

/* A side failed (read/write error, connect failure). */
static void side_error(struct pair *p, int x)
{
    if (g_drop)
        side_close(p, x, 0);       /* the other side must not notice */
    else if (x == C)
        pair_kill(p, 0, 1);        /* pass the reset on */
    else
        pair_kill(p, 1, 0);
}

/* Start (or continue with the next address) the connection to the target. */
static int pair_connect(struct pair *p)
{
    while (p->ai_next) {
        const struct addrinfo *ai = p->ai_next;
        p->ai_next = ai->ai_next;
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0)
            continue;
        set_nodelay(fd);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            p->sd[S].fd = fd;
            p->connecting = 0;
            return 0;
        }
        if (errno == EINPROGRESS || errno == EINTR) {
            p->sd[S].fd = fd;
            p->connecting = 1;
            return 0;
        }
        close(fd);
    }
    p->connecting = 0;
    return -1;
}

static void connect_failed(struct pair *p)
{
    if (pair_connect(p) == 0)
        return;
    side_error(p, S);
}

static void check_connect(struct pair *p)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(p->sd[S].fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == 0) {
        p->connecting = 0;
        return;
    }
    if (err == EINPROGRESS || err == EALREADY)
        return;
    close(p->sd[S].fd);
    p->sd[S].fd = -1;
    connect_failed(p);
}

/* Takes over the server side of the pair whose request fired a reset, so
 * that it stays open (and read) until the server has answered. */
static void settle_begin(struct pair *p)
{
    if (g_settle_active || p->closed || p->connecting || p->sd[S].fd < 0)
        return;
    g_settle.fr[S] = p->fr[S];   /* continue parsing where the pair was */
    g_settle.sd[S].fd = p->sd[S].fd;
    p->sd[S].fd = -1;
    p->sd[S].dead = 1;
    g_settle_active = 1;
    g_settle_done = 0;
    clock_gettime(CLOCK_MONOTONIC, &g_settle_deadline);
    g_settle_deadline.tv_sec += 10;
}

/* The server answered (or closed, or took too long): close its side
 * normally and let the connections held meanwhile reach it. */
static void settle_end(void)
{
    if (!g_settle_active)
        return;
    drain(g_settle.sd[S].fd);
    close(g_settle.sd[S].fd);
    g_settle.sd[S].fd = -1;
    g_settle_active = 0;
    if (g_drop)
        return;                  /* held until "pass" */
    for (size_t i = 0; i < g_npairs; i++) {
        struct pair *p = g_pairs[i];
        if (p->closed || !p->held)
            continue;
        p->held = 0;
        p->ai_next = g_ai;
        if (pair_connect(p) < 0)
            side_error(p, S);
        else
            pair_update(p);
    }
}

static void settle_read(void)
{
    for (int i = 0; i < 64 && g_settle_active && !g_settle_done; i++) {
        ssize_t n = recv(g_settle.sd[S].fd, g_scratch, sizeof g_scratch, MSG_DONTWAIT);
        if (n > 0) {
            st_dropped += (size_t)n;
            framer_feed(&g_settle, S, g_scratch, (size_t)n, 0);
            if (g_settle.fr[S].desync)
                g_settle_done = 1;  /* can't tell: don't wait any longer */
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        } else {
            g_settle_done = 1;   /* closed or failed: nothing more to wait for */
        }
    }
}

static long long ms_until(const struct timespec *t)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
}

static void fire(void)
{
    int kind = g_arm;
    int32_t op = g_arm_op;
    g_fire_pending = 0;
    g_arm = ARM_NONE;
    st_fired++;
    if (kind == ARM_RESET) {
        if (g_fire_pair)
            settle_begin(g_fire_pair);
        (void)reset_all(0);
    } else if (kind == ARM_DROP) {
        enter_drop();
    } else if (kind == ARM_HOLD) {
        g_hold = 1;
    }
    g_fire_pair = NULL;
    out_line("fired op %d", (int)op);
}

/* Read what side x has to say. */
static void side_read(struct pair *p, int x)
{
    struct side *s = &p->sd[x];
    struct buf *b = &p->b[x];
    size_t quota = READ_QUOTA;
    while (!p->closed && s->fd >= 0 && !s->rd_eof) {
        unsigned char *dst;
        size_t room;
        if (g_drop && !p->held) {
            dst = g_scratch;
            room = sizeof g_scratch;
        } else {
            if (b->start == b->end)
                b->start = b->end = 0;
            else if (b->end == BUFCAP && b->start > 0) {
                memmove(b->data, b->data + b->start, b->end - b->start);
                b->end -= b->start;
                b->start = 0;
            }
            room = BUFCAP - b->end;
            if (room == 0)
                return;
            dst = b->data + b->end;
        }
        ssize_t n = recv(s->fd, dst, room, 0);
        if (n > 0) {
            if (g_drop && !p->held) {
                st_dropped += (size_t)n;
                framer_feed(p, x, dst, (size_t)n, 1);
            } else
                b->end += (size_t)n;
            if ((size_t)n >= quota)
                return;
            quota -= (size_t)n;
            continue;
        }
        if (n == 0) {
            s->rd_eof = 1;
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        side_error(p, x);
        return;
    }
}

/* Write what was read from side x to the other side. */
static void flush(struct pair *p, int x)
{
    int y = !x;
    struct buf *b = &p->b[x];
    struct side *d = &p->sd[y];
    while (!p->closed && !g_drop && !(x == S && g_hold) && b->end > b->start &&
           d->fd >= 0 && !d->dead && !(y == S && p->connecting)) {
        const unsigned char *src = b->data + b->start;
        size_t len = b->end - b->start;
        if (x == C && g_arm != ARM_NONE)
            len = framer_limit(&p->fr[C], src, len);
        ssize_t n = send(d->fd, src, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            side_error(p, y);
            return;
        }
        if (x == C)
            st_c2s += (size_t)n;
        else
            st_s2c += (size_t)n;
        framer_feed(p, x, src, (size_t)n, 0);
        b->start += (size_t)n;
        if (b->start == b->end)
            b->start = b->end = 0;
        if (g_fire_pending) {
            fire();
            return;
        }
    }
}

/* Propagate EOFs and close finished pairs. */
static void pair_update(struct pair *p)
{
    if (p->closed)
        return;
    if (p->held) {
        if (p->sd[C].dead || p->sd[C].rd_eof)
            pair_kill(p, 0, 0);    /* gave up before reaching the target */
        return;
    }
    if (g_drop) {
        if ((p->sd[C].dead || p->sd[C].rd_eof) && (p->sd[S].dead || p->sd[S].rd_eof))
            pair_kill(p, 0, 0);    /* nobody left to talk to */
        return;
    }
    if (p->sd[C].dead || p->sd[S].dead) {
        /* lost a side during a drop: the survivor learns it now */
        pair_kill(p, 1, 1);
        return;
    }
    for (int x = C; x <= S; x++) {
        int y = !x;
        if (p->sd[x].rd_eof && buf_len(&p->b[x]) == 0 && !p->sd[y].wr_shut &&
            !(y == S && p->connecting)) {
            (void)shutdown(p->sd[y].fd, SHUT_WR);
            p->sd[y].wr_shut = 1;
        }
    }
    if (p->sd[C].rd_eof && p->sd[S].rd_eof && p->sd[C].wr_shut && p->sd[S].wr_shut)
        pair_kill(p, 0, 0);
}

static void pair_io(struct pair *p, short crev, short srev)
{
    short rev[2] = { crev, srev };
    if (p->connecting && srev) {
        check_connect(p);
        rev[S] = 0;
    }
    for (int x = C; x <= S && !p->closed; x++) {
        struct side *s = &p->sd[x];
        if (!rev[x] || s->fd < 0)
            continue;
        if (rev[x] & POLLNVAL) {
            side_error(p, x);
        } else if (rev[x] & POLLERR) {
            side_error(p, x);
        } else if (rev[x] & (POLLIN | POLLHUP)) {
            if (rev[x] & POLLHUP)
                s->hup = 1;
            if (!s->rd_eof)
                side_read(p, x);
            else if (rev[x] & POLLHUP)
                side_error(p, x); /* read done, and the socket is gone */
        }
    }
    /* Optimistic writes: most of the time the destination has room. */
    if (!p->closed)
        flush(p, C);
    if (!p->closed)
        flush(p, S);
    pair_update(p);
}

/* Poll events wanted for side x of p; -1 if it must not be polled. */
static int side_events(const struct pair *p, int x)
{
    const struct side *s = &p->sd[x];
    if (p->closed || s->fd < 0 || s->dead)
        return -1;
    if (x == S && p->connecting)
        return POLLOUT;
    int ev = 0;
    if (!s->rd_eof && ((g_drop && !p->held) || buf_len(&p->b[x]) < BUFCAP))
        ev |= POLLIN;
    if (!g_drop && !(x == C && g_hold) && buf_len(&p->b[!x]) > 0)
        ev |= POLLOUT;
    if (s->rd_eof && s->wr_shut)
        return -1;
    if (s->hup && !(ev & POLLIN) && !(ev & POLLOUT))
        return -1;
    return ev;
}

static int add_pair(struct pair *p)
{
    if (g_npairs == g_cappairs) {
        size_t ncap = g_cappairs ? g_cappairs * 2 : 16;
        struct pair **np = realloc(g_pairs, ncap * sizeof *np);
        if (!np)
            return -1;
        g_pairs = np;
        g_cappairs = ncap;
    }
    g_pairs[g_npairs++] = p;
    return 0;
}

static void sweep(void)
{
    size_t j = 0;
    for (size_t i = 0; i < g_npairs; i++) {
        if (g_pairs[i]->closed)
            free(g_pairs[i]);
        else
            g_pairs[j++] = g_pairs[i];
    }
    g_npairs = j;
}

/* ---------- listening ---------- */

static int bind_listen_addr(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr = g_laddr;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static int bound_port(int fd)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    memset(&sa, 0, sizeof sa);
    if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
        return -1;
    return ntohs(sa.sin_port);
}

/* Listening socket on g_laddr:port.  With port 0 the kernel picks one, and
 * the socket is then bound again explicitly to that port: a socket whose
 * port was picked by the kernel loses it when it stops listening ("refuse"),
 * an explicitly bound one keeps it. */
static int open_listener(int port)
{
    int fd = bind_listen_addr(port);
    if (fd < 0)
        return -1;
    if (port == 0) {
        int picked = bound_port(fd);
        int fd2 = picked > 0 ? bind_listen_addr(picked) : -1;
        if (fd2 >= 0) {    /* both SO_REUSEADDR, neither listening: allowed */
            close(fd);
            fd = fd2;
        }
    }
    if (listen(fd, BACKLOG) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

static void do_accept(void)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept4(g_lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* can't take it now; don't spin on the readable listener */
                clock_gettime(CLOCK_MONOTONIC, &g_accept_resume);
                g_accept_resume.tv_nsec += 100 * 1000000L;
                if (g_accept_resume.tv_nsec >= 1000000000L) {
                    g_accept_resume.tv_sec++;
                    g_accept_resume.tv_nsec -= 1000000000L;
                }
                g_accept_paused = 1;
            }
            return;
        }
        if (g_refuse) {
            close_rst(fd);
            continue;
        }
        struct pair *p = calloc(1, sizeof *p);
        if (!p || add_pair(p) < 0) {
            free(p);
            close_rst(fd);
            continue;
        }
        set_nodelay(fd);
        p->sd[C].fd = fd;
        p->sd[S].fd = -1;
        p->ai_next = g_ai;
        st_accepted++;
        if (g_drop || g_settle_active)
            p->held = 1;       /* connected on "pass", or when settled */
        else if (pair_connect(p) < 0)
            side_error(p, S);  /* RST the client */
    }
}

static void do_refuse(void)
{
    if (g_refuse)
        return;
    g_refuse = 1;
    /* On Linux, SHUT_RD on a listening socket stops listening (pending
     * connections are reset) but keeps the port bound; listen() resumes.
     * Should that fail, connections are accepted and reset at once. */
    if (shutdown(g_lfd, SHUT_RD) == 0)
        g_refuse_unlistened = 1;
}

static const char *do_unrefuse(void)
{
    if (!g_refuse)
        return NULL;
    if (g_refuse_unlistened) {
        if (listen(g_lfd, BACKLOG) < 0 || bound_port(g_lfd) != g_lport) {
            /* fall back to a fresh socket on the same port */
            int fd = open_listener(g_lport);
            if (fd < 0)
                return "cannot listen again";
            close(g_lfd);
            g_lfd = fd;
        }
        g_refuse_unlistened = 0;
    }
    g_refuse = 0;
    return NULL;
}

/* ---------- control ---------- */

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s)
        return -1;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void handle_cmd(char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        line[--n] = '\0';
    while (*line == ' ' || *line == '\t')
        line++;
    if (!*line)
        return;
    char *arg = line + strcspn(line, " \t");
    if (*arg) {
        *arg++ = '\0';
        while (*arg == ' ' || *arg == '\t')
            arg++;
    }
    int has_arg = *arg != '\0';

    if (!strcmp(line, "pass") && !has_arg) {
        if (g_hold) {
            g_hold = 0;
            for (size_t i = 0; i < g_npairs; i++)
                if (!g_pairs[i]->closed) {
                    flush(g_pairs[i], S);
                    pair_update(g_pairs[i]);
                }
        }
        if (g_drop) {
            int nreset, nresumed;
            leave_drop(&nreset, &nresumed);
            out_line("ok reset=%d resumed=%d", nreset, nresumed);
        } else {
            out_line("ok");
        }
    } else if (!strcmp(line, "drop") && !has_arg) {
        enter_drop();
        out_line("ok");
    } else if (!strcmp(line, "hold") && !has_arg) {
        g_hold = 1;
        out_line("ok");
    } else if (!strcmp(line, "reset") && !has_arg) {
        int k = reset_all(1);
        out_line("ok closed=%d", k);
    } else if (!strcmp(line, "refuse") && !has_arg) {
        do_refuse();
        out_line("ok");
    } else if (!strcmp(line, "accept") && !has_arg) {
        const char *e = do_unrefuse();
        if (e)
            out_line("err %s", e);
        else
            out_line("ok");
    } else if (!strcmp(line, "reset-after-op") || !strcmp(line, "drop-after-op") ||
               !strcmp(line, "hold-after-op")) {
        long op;
        if (parse_int(arg, INT32_MIN, INT32_MAX, &op) < 0) {
            out_line("err usage: %s OPCODE", line);
            return;
        }
        g_arm = line[0] == 'r' ? ARM_RESET : line[0] == 'd' ? ARM_DROP : ARM_HOLD;
        g_arm_op = (int32_t)op;
        out_line("ok");
    } else if (!strcmp(line, "disarm") && !has_arg) {
        g_arm = ARM_NONE;
        out_line("ok");
    } else if (!strcmp(line, "stats") && !has_arg) {
        out_line("ok conns=%zu accepted=%llu c2s=%llu s2c=%llu dropped=%llu fired=%llu",
                 open_pairs(), st_accepted, st_c2s, st_s2c, st_dropped, st_fired);
    } else if (!strcmp(line, "quit") && !has_arg) {
        out_line("ok");
        g_quit = 1;
    } else if (has_arg && (!strcmp(line, "pass") || !strcmp(line, "drop") || !strcmp(line, "hold") ||
                           !strcmp(line, "reset") ||
                           !strcmp(line, "refuse") || !strcmp(line, "accept") || !strcmp(line, "disarm") ||
                           !strcmp(line, "stats") || !strcmp(line, "quit"))) {
        out_line("err %s takes no argument", line);
    } else {
        out_line("err unknown command");
    }
}

static void read_control(void)
{
    ssize_t n;
    do {
        n = read(STDIN_FILENO, g_ctl + g_ctl_len, sizeof g_ctl - g_ctl_len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    if (n <= 0) {
        g_quit = 1;            /* EOF (or a broken stdin): quit */
        return;
    }
    g_ctl_len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < g_ctl_len && !g_quit; i++) {
        if (g_ctl[i] != '\n')
            continue;
        g_ctl[i] = '\0';
        if (g_ctl_overflow) {
            out_line("err line too long");
            g_ctl_overflow = 0;
        } else {
            handle_cmd(g_ctl + start);
        }
        start = i + 1;
    }
    if (g_quit)
        return;
    memmove(g_ctl, g_ctl + start, g_ctl_len - start);
    g_ctl_len -= start;
    if (g_ctl_len == sizeof g_ctl) { /* no newline in a full buffer */
        g_ctl_overflow = 1;
        g_ctl_len = 0;
    }
}

/* ---------- main ---------- */

static void on_signal(int sig)
{
    g_sig = sig;
}

static void cleanup(void)
{
    if (g_settle_active) {
        close(g_settle.sd[S].fd);
        g_settle_active = 0;
    }
    for (size_t i = 0; i < g_npairs; i++) {
        pair_kill(g_pairs[i], 0, 0);
        free(g_pairs[i]);
    }
    free(g_pairs);
    g_pairs = NULL;
    g_npairs = g_cappairs = 0;
    if (g_lfd >= 0)
        close(g_lfd);
    g_lfd = -1;
    if (g_ai)
        freeaddrinfo(g_ai);
    g_ai = NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: faultproxy TARGET_HOST:TARGET_PORT [LISTEN_PORT [LISTEN_ADDR]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4)
        return usage();

    /* target */
    char host[256];
    const char *spec = argv[1];
    const char *colon = strrchr(spec, ':');
    if (!colon || colon == spec || strlen(spec) >= sizeof host)
        return usage();
    size_t hl = (size_t)(colon - spec);
    const char *h = spec;
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    long tport, lport = 0;
    if (parse_int(colon + 1, 1, 65535, &tport) < 0)
        return usage();
    if (argc >= 3 && parse_int(argv[2], 0, 65535, &lport) < 0)
        return usage();
    g_laddr.s_addr = htonl(INADDR_LOOPBACK);
    if (argc == 4 && inet_pton(AF_INET, argv[3], &g_laddr) != 1)
        return usage();

    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_ADDRCONFIG;
    int gai = getaddrinfo(host, colon + 1, &hints, &g_ai);
    if (gai != 0) {
        fprintf(stderr, "faultproxy: cannot resolve %s: %s\n", host, gai_strerror(gai));
        return 1;
    }
    /* Try loopback-v4 first: ZooKeeper test servers usually bind 127.0.0.1. */
    if (g_ai->ai_family != AF_INET) {
        struct addrinfo **pp = &g_ai->ai_next;
        while (*pp && (*pp)->ai_family != AF_INET)
            pp = &(*pp)->ai_next;
        if (*pp) {
            struct addrinfo *v4 = *pp;
            *pp = v4->ai_next;
            v4->ai_next = g_ai;
            g_ai = v4;
        }
    }

    /* signals */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGINT);

    g_lfd = open_listener((int)lport);
    if (g_lfd < 0) {
        char a[INET_ADDRSTRLEN];
        int e = errno;
        inet_ntop(AF_INET, &g_laddr, a, sizeof a);
        fprintf(stderr, "faultproxy: cannot listen on %s:%ld: %s\n", a, lport, strerror(e));
        cleanup();
        return 1;
    }
    g_lport = bound_port(g_lfd);
    if (g_lport <= 0) {
        fprintf(stderr, "faultproxy: getsockname: %s\n", strerror(errno));
        cleanup();
        return 1;
    }
    out_line("PORT %d", g_lport);

    struct pollfd *pfds = NULL;
    size_t pcap = 0;
    while (!g_quit && !g_sig) {
        size_t np = g_npairs;
        size_t need = 3 + 2 * np;
        if (need > pcap || !pfds) {
            size_t ncap = pcap ? pcap : 64;
            while (ncap < need)
                ncap *= 2;
            struct pollfd *n = realloc(pfds, ncap * sizeof *n);
            if (!n) {
                fprintf(stderr, "faultproxy: out of memory\n");
                break;
            }
            pfds = n;
            pcap = ncap;
        }
        pfds[0].fd = STDIN_FILENO;
        pfds[0].events = POLLIN;
        struct timespec ts, *tsp = NULL;
        /* Wake for the earliest of: accept resuming, a settle's deadline. */
        long long wait_ms = -1;
        if (g_accept_paused) {
            long long ms = ms_until(&g_accept_resume);
            if (ms <= 0)
                g_accept_paused = 0;
            else
                wait_ms = ms;
        }
        if (g_settle_active) {
            long long ms = ms_until(&g_settle_deadline);
            if (ms < 0)
                ms = 0;
            if (wait_ms < 0 || ms < wait_ms)
                wait_ms = ms;
        }
        if (wait_ms >= 0) {
            ts.tv_sec = wait_ms / 1000;
            ts.tv_nsec = (wait_ms % 1000) * 1000000L;
            tsp = &ts;
        }
        pfds[1].fd = (g_lfd >= 0 && !g_accept_paused && !g_refuse_unlistened) ? g_lfd : -1;
        pfds[1].events = POLLIN;
        pfds[2].fd = g_settle_active ? g_settle.sd[S].fd : -1;
        pfds[2].events = POLLIN;
        pfds[2].revents = 0;
        for (size_t i = 0; i < np; i++) {
            for (int x = C; x <= S; x++) {
                struct pollfd *pf = &pfds[3 + 2 * i + (size_t)x];
                int ev = side_events(g_pairs[i], x);
                pf->fd = ev < 0 ? -1 : g_pairs[i]->sd[x].fd;
                pf->events = (short)(ev < 0 ? 0 : ev);
                pf->revents = 0;
            }
        }
        pfds[0].revents = pfds[1].revents = 0;

        int r = ppoll(pfds, need, tsp, &waitmask);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "faultproxy: poll: %s\n", strerror(errno));
            break;
        }
        if (pfds[0].revents) {
            read_control();
            if (g_quit)
                break;
        }
        if (pfds[2].revents && g_settle_active)
            settle_read();
        if (g_settle_active && (g_settle_done || ms_until(&g_settle_deadline) <= 0))
            settle_end();
        if (pfds[1].revents && pfds[1].fd == g_lfd && !g_refuse_unlistened)
            do_accept();
        for (size_t i = 0; i < np; i++) {
            struct pair *p = g_pairs[i];
            short cr = pfds[3 + 2 * i].revents, sr = pfds[4 + 2 * i].revents;
            if (!p->closed && (cr || sr))
                pair_io(p, cr, sr);
        }
        sweep();
    }
    free(pfds);
    cleanup();
    return 0;
}
