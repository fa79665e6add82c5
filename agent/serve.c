/* SPDX-License-Identifier: Apache-2.0 */
/*
 * serve.c - zklockd's loop: the clients' connections, their frames, the
 * calls they make on the agent's session, and the lease relayed to them.
 *
 * A client's locks live as long as its work: a waiting attempt goes with
 * its connection, and a held node goes when the client releases or frees
 * it, or, once its connection has ended (exit, crash, SIGKILL, its process
 * dead while a forked child keeps the socket open, a cut-off), when its
 * work is proven stopped (its process gone and every worker it named gone:
 * procs.c) or when the lease last relayed to it has run out (its deadline
 * plus the margin, when its own clock and zklock's keeper have stopped
 * everything: docs/correctness.md, "Through the agent"). A dead client
 * with no worker is freed at once, which the library turns into one delete
 * per node, so the next waiter hears its predecessor go within one round
 * trip. The agent's stop follows the same rule: it tells every holder
 * (LOST, ZKL_LOST_AGENT), stops relaying deadlines, and deletes each held
 * node only by that rule, then ends its session.
 *
 * The library's callbacks name a lock by a number (its id), never by a
 * pointer: a callback may be on its way (queued on the completion thread,
 * or running on the timer thread) when the loop frees the lock, and it
 * then finds no lock of that number and does nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* accept4, pipe2, struct ucred */
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "wire.h"

/* Bounds on what one client may take of the agent. */
#define CLIENT_LOCKS_MAX 4096            /* handles open at once */
#define CLIENT_OUT_MAX (8 * 1024 * 1024) /* unread frames: then it is cut off */
#define CLIENTS_MAX 65536
#define LEASE_STEP_MS 100 /* resend the deadline when it moved this much */
#define ID_BUCKETS 65536
/* Blocking calls (admin.c) running at once: each is a thread. */
#define CLIENT_ADMIN_MAX 4
#define ADMIN_MAX 64
/* Guarded writes of one client in flight: each holds its ops (up to a
 * frame's worth) until ZooKeeper answers. */
#define CLIENT_COMMITS_MAX 64
/* Workers one client may name (ZKL_MSG_WORK): zklock names one. */
#define CLIENT_WORKERS_MAX 16

typedef struct client client;

/* A leader watch of a client (ZKL_MSG_WATCH_LEADER). */
typedef struct awatch {
  uint64_t id; /* what its callback carries */
  client *c;
  int32_t handle;
  zkl_leader_watch *w;
  struct awatch *next; /* in srv->watches */
} awatch;

/* One handle of one client. A read/write lock is two: its read side at
 * handle h (which owns the zkl_rwlock) and its write side at h + 1. */
typedef struct alock {
  uint64_t id; /* what the library's callbacks carry */
  client *c;
  int32_t handle;
  int kind;
  zkl_lock *l;
  zkl_rwlock *rw;     /* the read side's record owns it */
  struct alock *pair; /* the other side of a read/write lock */
  bool write_side;    /* freed with its read side, never alone */
  int rc;             /* != 0: the lock could not be made; acquire says so */
  uint32_t acquire_req, release_req;
  bool acquiring, releasing;
  int holds;
  /* Its node is the client's hold, told lost or not, until its release or
   * free: the connection's end lets it go only by settle()'s rule. */
  bool kept;
  int grace_ms;          /* the client's max-hold grace (set_grace) */
  struct alock *next;    /* in c->locks */
  struct alock *id_next; /* in its id bucket */
  struct alock *lock_next; /* in its lock's bucket (srv->by_lock) */
} alock;

struct client {
  uint64_t id; /* what admin.c's replies carry */
  int fd;      /* -1 once the connection has ended */
  pid_t pid;
  int pidfd;   /* the peer's (procs.c), or -1 */
  int workers[CLIENT_WORKERS_MAX]; /* pidfds of the processes it named */
  int n_workers;
  bool peer_done; /* its process closed the connection, or has exited */
  bool ended;     /* the connection is over; kept nodes wait (settle) */
  uid_t uid;
  gid_t gid;
  unsigned char *in;
  size_t in_len, in_cap;
  unsigned char *out;
  size_t out_len, out_off, out_cap;
  bool hello;
  int revision; /* agreed at HELLO (wire.h): 2 hears PONG, SERVERS, EVENT */
  bool events;  /* told its attempts' queueing (ZKL_MSG_EVENTS) */
  bool closing; /* cut off once the out buffer is written (a BYE) */
  bool dead;
  int n_locks;
  int n_admin; /* its blocking calls running (admin.c) */
  int n_commits; /* its guarded writes in flight */
  unsigned holding; /* handles with holds > 0 */
  int64_t lease_sent;   /* the newest deadline it was told */
  int64_t last_heard;   /* when it last sent anything */
  bool silent;          /* quiet past the session timeout: told no newer
                           deadline, and cut off once the last has passed */
  alock *locks;
  client *next;
};

struct server {
  pthread_mutex_t mu;
  zkl_session *s;
  policy *pol;
  server_config cfg;
  int wake_rd, wake_wr;
  client *clients;
  int n_clients;
  uint64_t next_id;
  alock *ids[ID_BUCKETS];
  /* The records by their zkl_lock, for the event hook, whose events name
   * the lock itself. An event holds its lock (events.c), so no other lock
   * is made at that address before its callback returns: a record found
   * is the event's own, and one freed meanwhile is not found. */
  alock *by_lock[ID_BUCKETS];
  int n_event_clients; /* with events on: the session's hook is set */
  char servers[ZKL_SERVERS_MAX]; /* the connect string clients were told */
  bool session_over; /* expired: every client is told, then a new one */
  uint64_t next_client;
  awatch *watches;
  int n_admin;              /* admin.c's threads running, in all */
  pthread_cond_t admin_end; /* n_admin went down */
  /* Threads other than the loop waiting for mu (the library's callback
   * thread, admin.c's): the loop, which holds mu for all its work, hands
   * it over to them between frames (see yield_mu). */
  int mu_wanted;
  pthread_cond_t mu_served; /* a waiter for mu had its turn */
  commit_call *commits;     /* guarded writes in flight (commit.c) */
  bool stopping; /* SIGTERM: every holder told; held nodes wait (settle) */
};

static server *srv_; /* the one server of this process (callbacks) */

static void logf_(const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2)))
#endif
    ;
#include <stdarg.h>
static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zklockd: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void wake(server *srv) {
  char x = 1;
  ssize_t n = write(srv->wake_wr, &x, 1); /* full pipe: already awake */
  (void)n;
}

/* mu for a thread other than the loop's. The loop holds mu while it serves
 * frames and lets go of it only around poll(): a mutex is not fair, and a
 * client that writes without pause keeps the loop busy, so a waiter woken
 * at the unlock finds mu taken again and sleeps on. The waiter here is the
 * library's callback thread, which every ZooKeeper answer of the session
 * waits behind: grants, releases, and the lease itself went unrelayed
 * until the good clients lost their holds (test_agent_hostile, "a client
 * that never stops writing", under ASan). So a waiter says it waits, and
 * the loop hands mu over (yield_mu). */
static void lock_mu(server *srv) {
  __atomic_add_fetch(&srv->mu_wanted, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_lock(&srv->mu);
  __atomic_sub_fetch(&srv->mu_wanted, 1, __ATOMIC_SEQ_CST);
}

static void unlock_mu(server *srv) {
  pthread_cond_broadcast(&srv->mu_served);
  pthread_mutex_unlock(&srv->mu);
}

/* The loop, holding mu: lets every thread that waits for it have its turn
 * first. Each of them holds mu briefly and never waits for the loop, so
 * this ends. */
static void yield_mu(server *srv) {
  while (__atomic_load_n(&srv->mu_wanted, __ATOMIC_SEQ_CST) > 0)
    pthread_cond_wait(&srv->mu_served, &srv->mu);
}

/* ----------------------------------------------------------- the ids */

static alock *find_id(server *srv, uint64_t id) {
  alock *a;
  for (a = srv->ids[id % ID_BUCKETS]; a; a = a->id_next)
    if (a->id == id)
      return a;
  return NULL;
}

static size_t lock_bucket(const zkl_lock *l) {
  return (size_t)(((uintptr_t)l >> 4) % ID_BUCKETS);
}

static alock *find_lock(server *srv, const zkl_lock *l) {
  alock *a;
  for (a = srv->by_lock[lock_bucket(l)]; a; a = a->lock_next)
    if (a->l == l)
      return a;
  return NULL;
}

static void forget_id(server *srv, alock *a) {
  alock **p;
  for (p = &srv->ids[a->id % ID_BUCKETS]; *p; p = &(*p)->id_next)
    if (*p == a) {
      *p = a->id_next;
      break;
    }
  if (!a->l)
    return;
  for (p = &srv->by_lock[lock_bucket(a->l)]; *p; p = &(*p)->lock_next)
    if (*p == a) {
      *p = a->lock_next;
      break;
    }
}

/* ------------------------------------------------------------ frames */

/* Queues a finished frame for c; a client that leaves CLIENT_OUT_MAX
 * unread is cut off (its locks freed) rather than grow the agent. */
static void send_frame(server *srv, client *c, zkl_wbuf *b) {
  if (c->dead || c->closing || !zkl__wire_end(b)) {
    zkl__wire_free(b);
    return;
  }
  if (c->out_len - c->out_off + b->len > CLIENT_OUT_MAX) {
    if (srv->cfg.verbose)
      logf_("pid %ld: cut off: %zu bytes unread", (long)c->pid,
            c->out_len - c->out_off);
    c->closing = true;
    c->out_len = c->out_off = 0;
    zkl__wire_free(b);
    wake(srv);
    return;
  }
  if (c->out_off > 0 && c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  if (c->out_len + b->len > c->out_cap) {
    size_t cap = c->out_cap ? c->out_cap : 4096;
    unsigned char *d;
    while (cap < c->out_len + b->len)
      cap *= 2;
    if (!(d = realloc(c->out, cap))) {
      c->closing = true;
      zkl__wire_free(b);
      return;
    }
    c->out = d;
    c->out_cap = cap;
  }
  memcpy(c->out + c->out_len, b->data, b->len);
  c->out_len += b->len;
  zkl__wire_free(b);
  wake(srv);
}

static void reply_rc(server *srv, client *c, uint32_t req, int rc) {
  zkl_wbuf b = {0};
  zkl__wire_begin(&b, ZKL_MSG_REPLY, req);
  zkl__wire_i32(&b, rc);
  send_frame(srv, c, &b);
}

/* The answer to an acquire, whatever its outcome: always every field. */
static void reply_acquire(server *srv, client *c, uint32_t req, int rc,
                          int64_t token, int64_t deadline, const char *paths,
                          const char *other, const char *refused) {
  zkl_wbuf b = {0};
  zkl__wire_begin(&b, ZKL_MSG_REPLY, req);
  zkl__wire_i32(&b, rc);
  zkl__wire_i64(&b, rc == ZKL_OK ? token : 0);
  zkl__wire_i64(&b, deadline);
  zkl__wire_str(&b, paths);
  zkl__wire_str(&b, other);
  zkl__wire_str(&b, refused);
  send_frame(srv, c, &b);
}

static void send_bye(server *srv, client *c, int rc) {
  zkl_wbuf b = {0};
  zkl__wire_begin(&b, ZKL_MSG_BYE, 0);
  zkl__wire_i32(&b, rc);
  send_frame(srv, c, &b);
  c->closing = true;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_lease(server *srv, client *c, int64_t deadline) {
  zkl_wbuf b = {0};
  zkl__wire_begin(&b, ZKL_MSG_LEASE, 0);
  zkl__wire_i64(&b, deadline);
  send_frame(srv, c, &b);
  c->lease_sent = deadline;
}

static void set_holds(alock *a, int holds) {
  if ((a->holds > 0) != (holds > 0))
    a->c->holding += holds > 0 ? 1 : -1;
  a->holds = holds;
}

/* A hold lost to the agent's own doing (its stop): the client is told, and
 * the node stays until it releases (settle() has the rest). */
static void tell_lost(server *srv, alock *a, int reason) {
  zkl_wbuf b = {0};
  set_holds(a, 0);
  zkl__wire_begin(&b, ZKL_MSG_LOST, 0);
  zkl__wire_i32(&b, a->handle);
  zkl__wire_i32(&b, reason);
  send_frame(srv, a->c, &b);
}

/* --------------------------------------------------- library callbacks */

static void on_acquired(zkl_lock *l, int rc, int64_t token, void *arg) {
  server *srv = srv_;
  alock *a;
  static char paths[ZKL_MULTI_NAMES_MAX * ZKL_PATH_MAX]; /* under srv->mu */
  const char *other, *refused;
  int64_t deadline;
  lock_mu(srv);
  if (!(a = find_id(srv, (uint64_t)(uintptr_t)arg)) || !a->acquiring) {
    unlock_mu(srv);
    return;
  }
  a->acquiring = false;
  paths[0] = 0;
  /* Stopping: a waiter canceled is told the agent's going, not a cancel
   * it never asked for. */
  if (rc != ZKL_OK && srv->stopping)
    rc = ZKL_EAGENT;
  if (rc == ZKL_OK) {
    set_holds(a, a->holds + 1);
    a->kept = true;
    if (zkl_lock_get_node_paths(l, paths, sizeof paths) != ZKL_OK)
      paths[0] = 0;
  }
  deadline = rc == ZKL_OK ? zkl_session_lease_deadline(srv->s) : 0;
  other = zkl_lock_other_kind(l);
  refused = zkl_lock_refused_name(l);
  if (rc == ZKL_OK && deadline > a->c->lease_sent)
    a->c->lease_sent = deadline;
  reply_acquire(srv, a->c, a->acquire_req, rc, token, deadline, paths, other,
                refused);
  /* Granted as the stop began (its cancel came too late): told at once,
   * as every other holder was. */
  if (rc == ZKL_OK && srv->stopping)
    tell_lost(srv, a, ZKL_LOST_AGENT);
  unlock_mu(srv);
}

static void on_released(zkl_lock *l, int rc, void *arg) {
  server *srv = srv_;
  alock *a;
  (void)l;
  lock_mu(srv);
  if ((a = find_id(srv, (uint64_t)(uintptr_t)arg)) && a->releasing) {
    a->releasing = false;
    if (rc == ZKL_OK || rc == ZKL_ELOST)
      set_holds(a, rc == ZKL_OK && a->holds > 0 ? a->holds - 1 : 0);
    if (rc == ZKL_ELOST || rc == ZKL_ENOTHELD || (rc == ZKL_OK && !a->holds))
      a->kept = false; /* the client let go: nothing waits for it now */
    reply_rc(srv, a->c, a->release_req, rc);
  }
  unlock_mu(srv);
}

static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  server *srv = srv_;
  alock *a;
  (void)l;
  lock_mu(srv);
  if ((a = find_id(srv, (uint64_t)(uintptr_t)arg)))
    tell_lost(srv, a, (int)reason);
  unlock_mu(srv);
}

static void on_revoke(zkl_lock *l, void *arg) {
  server *srv = srv_;
  alock *a;
  lock_mu(srv);
  if ((a = find_id(srv, (uint64_t)(uintptr_t)arg))) {
    zkl_wbuf b = {0};
    zkl__wire_begin(&b, ZKL_MSG_REVOKED, 0);
    zkl__wire_i32(&b, a->handle);
    if (a->c->revision >= 3) /* the holder must stop within a break's grace */
      zkl__wire_i32(&b, zkl_lock_break_mark(l) ? 1 : 0);
    send_frame(srv, a->c, &b);
  }
  unlock_mu(srv);
}

static void on_state(zkl_session *s, zkl_state state, void *arg) {
  server *srv = srv_;
  client *c;
  (void)s;
  (void)arg;
  lock_mu(srv);
  if (state == ZKL_STATE_EXPIRED || state == ZKL_STATE_AUTH_FAILED)
    srv->session_over = true;
  for (c = srv->clients; c; c = c->next) {
    zkl_wbuf b = {0};
    if (!c->hello)
      continue;
    zkl__wire_begin(&b, ZKL_MSG_STATE, 0);
    zkl__wire_i32(&b, (int32_t)state);
    send_frame(srv, c, &b);
  }
  wake(srv);
  unlock_mu(srv);
}

/* The session's event hook, set only while a client wants events (so the
 * agent pays nothing for it otherwise): the agent tells a client what only
 * it sees (docs/agent.md), an attempt's place in its queue. The rest of a
 * client's events its library tells from the agent's replies. */
static void on_event(zkl_session *s, const zkl_event *ev, void *arg) {
  server *srv = srv_;
  alock *a;
  (void)s;
  (void)arg;
  lock_mu(srv);
  if (ev->type == ZKL_EVENT_QUEUED && ev->lock &&
      (a = find_lock(srv, ev->lock)) && a->c->events && !a->c->closing) {
    static char paths[ZKL_MULTI_NAMES_MAX * ZKL_PATH_MAX]; /* under srv->mu */
    zkl_wbuf b = {0};
    if (zkl_lock_get_node_paths(ev->lock, paths, sizeof paths) != ZKL_OK)
      paths[0] = 0;
    zkl__wire_begin(&b, ZKL_MSG_EVENT, 0);
    zkl__wire_i32(&b, (int32_t)ev->type);
    zkl__wire_i32(&b, a->handle);
    zkl__wire_str(&b, ev->node);
    zkl__wire_str(&b, ev->waiting_for);
    zkl__wire_i32(&b, ev->position);
    zkl__wire_str(&b, paths);
    send_frame(srv, a->c, &b);
  }
  unlock_mu(srv);
}

/* --------------------------------------------------------- the locks */

static alock *find_handle(client *c, int32_t handle) {
  alock *a;
  for (a = c->locks; a; a = a->next)
    if (a->handle == handle)
      return a;
  return NULL;
}

static alock *new_record(server *srv, client *c, int32_t handle, int kind) {
  alock *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->id = ++srv->next_id;
  a->c = c;
  a->handle = handle;
  a->kind = kind;
  a->next = c->locks;
  c->locks = a;
  a->id_next = srv->ids[a->id % ID_BUCKETS];
  srv->ids[a->id % ID_BUCKETS] = a;
  c->n_locks++;
  return a;
}

/* Frees a handle (and a read/write lock's other side): the library
 * releases its hold or cancels its acquire, and deletes the node. */
static void free_record(server *srv, alock *a) {
  client *c = a->c;
  alock **p;
  alock *pair = a->pair;
  set_holds(a, 0);
  forget_id(srv, a);
  for (p = &c->locks; *p; p = &(*p)->next)
    if (*p == a) {
      *p = a->next;
      break;
    }
  c->n_locks--;
  if (pair) {
    pair->pair = NULL;
    if (a->rw) {
      pair->rw = a->rw; /* the read side goes first: hand the object over */
      a->rw = NULL;
    }
    free_record(srv, pair);
  } else if (a->rw) {
    zkl_rwlock_free(a->rw);
  } else if (a->l) {
    zkl_lock_free(a->l);
  }
  free(a);
}

static void hook(alock *a) {
  void *id = (void *)(uintptr_t)a->id;
  size_t k = lock_bucket(a->l);
  a->lock_next = srv_->by_lock[k];
  srv_->by_lock[k] = a;
  zkl_lock_on_lost(a->l, on_lost, id);
  zkl_lock_on_revoke(a->l, on_revoke, id);
  if (srv_->cfg.acl_forced) /* --acl: before any acquire can create */
    zkl_lock_set_acl(a->l, srv_->cfg.acl);
}

/* ZKL_MSG_NEW: makes the contender, or a record of why it could not be
 * made, which its acquire then answers (no reply: the client does not
 * wait for its locks to be made). */
static void call_new(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f), kind = zkl__wire_get_i32(f);
  int32_t limit = zkl__wire_get_i32(f);
  const char *id = zkl__wire_get_str(f);
  int32_t count = zkl__wire_get_i32(f), i;
  const char *names[ZKL_MULTI_NAMES_MAX];
  alock *a, *b = NULL;
  int rc = ZKL_OK;
  if (f->bad || count < 1 || count > ZKL_MULTI_NAMES_MAX ||
      (kind != ZKL_AGENT_MULTI && count != 1)) {
    f->bad = true;
    return;
  }
  for (i = 0; i < count; i++)
    names[i] = zkl__wire_get_str(f);
  if (!zkl__wire_done(f))
    return;
  if (handle <= 0 || handle == INT32_MAX || find_handle(c, handle) ||
      (kind == ZKL_AGENT_RWLOCK && find_handle(c, handle + 1))) {
    f->bad = true; /* the client numbers its handles: a reuse is a bug */
    return;
  }
  if (srv->stopping)
    rc = ZKL_EAGENT; /* its acquire says so */
  else if (c->n_locks >= CLIENT_LOCKS_MAX)
    rc = ZKL_EDENIED;
  for (i = 0; rc == ZKL_OK && i < count; i++) {
    if (zkl_name_check(names[i]) != ZKL_OK)
      rc = ZKL_EINVAL;
    else if (!policy_allows(srv->pol, POLICY_LOCK, names[i], c->uid, c->gid))
      rc = ZKL_EDENIED;
  }
  if (!(a = new_record(srv, c, handle, kind)) ||
      (kind == ZKL_AGENT_RWLOCK && !(b = new_record(srv, c, handle + 1, kind)))) {
    send_bye(srv, c, ZKL_ENOMEM);
    return;
  }
  if (b) {
    a->pair = b;
    b->pair = a;
    b->write_side = true;
  }
  if (rc == ZKL_EDENIED && srv->cfg.verbose)
    logf_("pid %ld uid %ld: lock '%s' refused", (long)c->pid, (long)c->uid,
          names[0]);
  if (rc == ZKL_OK) {
    switch (kind) {
    case ZKL_AGENT_MUTEX:
      rc = zkl_lock_new(&a->l, srv->s, names[0]);
      break;
    case ZKL_AGENT_SEMAPHORE:
      rc = zkl_lock_new_semaphore(&a->l, srv->s, names[0], limit);
      break;
    case ZKL_AGENT_ELECTION:
      rc = zkl_lock_new_election(&a->l, srv->s, names[0], id);
      break;
    case ZKL_AGENT_MULTI:
      rc = zkl_lock_new_multi(&a->l, srv->s, names, count);
      break;
    case ZKL_AGENT_RWLOCK:
      rc = zkl_rwlock_new(&a->rw, srv->s, names[0]);
      if (rc == ZKL_OK) {
        a->l = zkl_rwlock_read(a->rw);
        b->l = zkl_rwlock_write(a->rw);
        hook(b);
      }
      break;
    default:
      rc = ZKL_EINVAL;
    }
  }
  if (b && rc != ZKL_OK) {
    b->rc = rc;
    b->l = NULL;
  }
  a->rc = rc;
  if (rc == ZKL_OK)
    hook(a);
  else
    a->l = NULL;
}

/* A bounded hold's end: the library tells the holder (here: queues a LOST
 * frame) and keeps the node until the holder releases or the grace runs
 * out. The client hears of it only when it reads that frame, or when its
 * own clock passes the last deadline it was told, within a session
 * timeout: the node stays that much longer than the client's grace, so
 * nobody is granted before the client was told. A client that reads its
 * LOST and releases ends it at once. */
static int set_grace(server *srv, alock *a, int grace_ms) {
  int t = zkl_session_timeout(srv->s);
  a->grace_ms = grace_ms;
  return zkl_lock_set_max_hold_grace(
      a->l, grace_ms > INT32_MAX - t ? INT32_MAX : grace_ms + t);
}

static void call_set(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f), option = zkl__wire_get_i32(f);
  int32_t value = zkl__wire_get_i32(f);
  const char *text = zkl__wire_get_str(f);
  alock *a;
  int rc = ZKL_EINVAL;
  if (!zkl__wire_done(f))
    return;
  if (!(a = find_handle(c, handle))) {
    f->bad = true;
    return;
  }
  if (!a->l)
    return; /* its acquire will say why it was not made */
  switch (option) {
  case ZKL_AGENT_SET_INFO:
    rc = zkl_lock_set_owner_info(a->l, text);
    break;
  case ZKL_AGENT_SET_MAX_HOLD:
    rc = zkl_lock_set_max_hold(a->l, value);
    if (rc == ZKL_OK)
      rc = set_grace(srv, a, a->grace_ms);
    break;
  case ZKL_AGENT_SET_GRACE:
    rc = set_grace(srv, a, value);
    break;
  case ZKL_AGENT_SET_WATCH_AFTER:
    rc = zkl_lock_set_watch_after(a->l, value);
    break;
  case ZKL_AGENT_SET_ACL: /* checked, then --acl's if the agent forces */
    rc = zkl_lock_set_acl(a->l, (zkl_acl)value);
    if (rc == ZKL_OK && srv->cfg.acl_forced)
      rc = zkl_lock_set_acl(a->l, srv->cfg.acl);
    break;
  case ZKL_AGENT_SET_LAYOUT:
    /* a client of revision 4 only: an older one never asks (wire.h) */
    rc = c->revision >= 4 ? zkl_lock_set_layout(a->l, (zkl_layout)value)
                          : ZKL_EINVAL;
    break;
  }
  /* The client checked the value as the library does: a refusal here is
   * a client that does not follow the protocol. */
  if (rc != ZKL_OK)
    f->bad = true;
}

static void call_acquire(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f), timeout = zkl__wire_get_i32(f);
  alock *a;
  int rc;
  if (!zkl__wire_done(f))
    return;
  if (!(a = find_handle(c, handle))) {
    f->bad = true;
    return;
  }
  if (a->rc != ZKL_OK || a->acquiring || srv->stopping) {
    reply_acquire(srv, c, f->request,
                  a->rc != ZKL_OK      ? a->rc
                  : a->acquiring ? ZKL_EINPROGRESS
                                 : ZKL_EAGENT,
                  0, 0, "", "", "");
    return;
  }
  a->acquiring = true;
  a->acquire_req = f->request;
  rc = zkl_lock_acquire_async(a->l, timeout, on_acquired,
                              (void *)(uintptr_t)a->id);
  if (rc != ZKL_OK) {
    a->acquiring = false;
    reply_acquire(srv, c, f->request, rc, 0, 0, "", zkl_lock_other_kind(a->l),
                  zkl_lock_refused_name(a->l));
  }
}

static void call_release(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f);
  alock *a;
  int rc;
  if (!zkl__wire_done(f))
    return;
  if (!(a = find_handle(c, handle))) {
    f->bad = true;
    return;
  }
  if (!a->l) {
    reply_rc(srv, c, f->request, ZKL_ENOTHELD);
    return;
  }
  if (a->releasing) {
    reply_rc(srv, c, f->request, ZKL_EINPROGRESS);
    return;
  }
  a->releasing = true;
  a->release_req = f->request;
  rc = zkl_lock_release_async(a->l, on_released, (void *)(uintptr_t)a->id);
  if (rc != ZKL_OK) {
    a->releasing = false;
    if (rc == ZKL_ELOST || rc == ZKL_ENOTHELD) {
      set_holds(a, 0);
      a->kept = false;
    }
    reply_rc(srv, c, f->request, rc);
  }
}

static void call_cancel(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f);
  alock *a;
  if (!zkl__wire_done(f))
    return;
  if (!(a = find_handle(c, handle))) {
    f->bad = true;
    return;
  }
  reply_rc(srv, c, f->request, a->l ? zkl_lock_cancel(a->l) : ZKL_EIDLE);
}

static void call_free(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f);
  alock *a;
  if (!zkl__wire_done(f))
    return;
  if (!(a = find_handle(c, handle)) || a->write_side) {
    f->bad = true; /* unknown, or a write side (freed with its read side) */
    return;
  }
  free_record(srv, a);
}

/* Whether node (a child name) in one of name's queues is one of c's own
 * contenders' nodes: a client may revoke or break its own without
 * POLICY_BREAK (it could free it anyway). */
static bool own_node(client *c, const char *name, const char *node) {
  static char paths[ZKL_MULTI_NAMES_MAX * ZKL_PATH_MAX]; /* under srv->mu */
  static char queues[8 * ZKL_PATH_MAX];
  size_t n = strlen(node);
  alock *a;
  if (zkl_name_get_queues(name, queues, sizeof queues) != ZKL_OK)
    return false;
  for (a = c->locks; a; a = a->next) {
    const char *p;
    if (!a->l || zkl_lock_get_node_paths(a->l, paths, sizeof paths) != ZKL_OK)
      continue;
    for (p = paths; *p; p += *p == ' ') {
      size_t len = strcspn(p, " "), parent;
      const char *q;
      if (len > n + 1 && p[len - n - 1] == '/' &&
          strncmp(p + len - n, node, n) == 0) {
        parent = len - n - 1; /* p[0..parent): the node's queue */
        for (q = queues; *q; q += *q == ' ') {
          size_t qlen = strcspn(q, " ");
          if (qlen == parent && strncmp(q, p, parent) == 0)
            return true;
          q += qlen;
        }
      }
      p += len;
    }
  }
  return false;
}

/* ZKL_MSG_BREAK, _REVOKE, _LIST, _FIND, _LEADER: judged here, run on a
 * thread of admin.c's, answered by server_admin_done(). */
static void call_admin(server *srv, client *c, zkl_rframe *f) {
  admin_call *call = admin_read(f);
  int action;
  if (!call) {
    if (!f->bad)
      reply_rc(srv, c, f->request, ZKL_ENOMEM);
    return;
  }
  action = admin_action(call);
  if (!admin_allowed(call, srv->pol, c->uid, c->gid) &&
      !(action == POLICY_BREAK && call->node && own_node(c, call->name, call->node))) {
    if (srv->cfg.verbose)
      logf_("pid %ld uid %ld: %s of '%s' refused", (long)c->pid,
            (long)c->uid, action == POLICY_BREAK ? "break" : "list",
            call->name);
    reply_rc(srv, c, f->request, ZKL_EDENIED);
    admin_free(call);
    return;
  }
  /* A bound on threads, not a policy: the client may ask again. */
  if (c->n_admin >= CLIENT_ADMIN_MAX || srv->n_admin >= ADMIN_MAX) {
    reply_rc(srv, c, f->request, ZKL_EDENIED);
    admin_free(call);
    return;
  }
  call->client = c->id;
  call->s = srv->s;
  call->srv = srv;
  call->done = server_admin_done;
  if (admin_start(call) != ZKL_OK) {
    reply_rc(srv, c, f->request, ZKL_ESYSTEM);
    admin_free(call);
    return;
  }
  c->n_admin++;
  srv->n_admin++;
}

void server_admin_done(server *srv, admin_call *call, zkl_wbuf *b) {
  client *c;
  lock_mu(srv);
  for (c = srv->clients; c && c->id != call->client; c = c->next)
    ;
  if (c) {
    c->n_admin--;
    send_frame(srv, c, b);
  } else {
    zkl__wire_free(b); /* it went away meanwhile */
  }
  srv->n_admin--;
  pthread_cond_broadcast(&srv->admin_end);
  unlock_mu(srv);
  admin_free(call);
}

/* ------------------------------------------------------ guarded writes */

static void reply_commit_rc(server *srv, client *c, uint32_t req, int rc) {
  zkl_wbuf b = {0};
  commit_reply(NULL, req, rc, false, &b);
  send_frame(srv, c, &b);
}

/* The library's answer to a guarded write: told to its client if the
 * handle it was made on is still there (a freed handle's calls go
 * unanswered: its client forgot them), and the record freed either way. */
static void on_committed(zkl_lock *l, int rc, void *arg) {
  server *srv = srv_;
  commit_call *cc, **p;
  client *c;
  alock *a;
  (void)l;
  lock_mu(srv);
  for (p = &srv->commits; (cc = *p); p = &cc->next)
    if (cc->id == (uint64_t)(uintptr_t)arg) {
      *p = cc->next;
      break;
    }
  if (cc) {
    for (c = srv->clients; c && c->id != cc->client; c = c->next)
      ;
    if (c)
      c->n_commits--;
    if (c && (a = find_id(srv, cc->lock)) && a->c == c) {
      zkl_wbuf b = {0};
      commit_reply(cc, cc->req, rc, true, &b);
      send_frame(srv, c, &b);
    }
    commit_free(cc);
  }
  unlock_mu(srv);
}

/* ZKL_MSG_COMMIT: the ops run as the client's own lock commits them,
 * once the policy allows "write" on every op's path; a refusal sends
 * nothing to ZooKeeper. */
static void call_commit(server *srv, client *c, zkl_rframe *f) {
  commit_call *cc = commit_read(f);
  alock *a;
  int i, rc = ZKL_OK;
  if (!cc) {
    if (!f->bad)
      reply_commit_rc(srv, c, f->request, ZKL_ENOMEM);
    return;
  }
  if (!(a = find_handle(c, cc->handle))) {
    f->bad = true; /* not one of the client's handles */
    commit_free(cc);
    return;
  }
  for (i = 0; rc == ZKL_OK && i < cc->count; i++)
    if (!policy_allows(srv->pol, POLICY_WRITE, cc->paths[i], c->uid,
                       c->gid)) {
      if (srv->cfg.verbose)
        logf_("pid %ld uid %ld: write of '%s' refused", (long)c->pid,
              (long)c->uid, cc->paths[i]);
      rc = ZKL_EDENIED;
    }
  if (rc == ZKL_OK && !a->l)
    rc = ZKL_ENOTHELD; /* never made: it holds nothing */
  /* A bound on memory, not a policy: the client may ask again. */
  if (rc == ZKL_OK && c->n_commits >= CLIENT_COMMITS_MAX)
    rc = ZKL_EDENIED;
  if (rc != ZKL_OK) {
    reply_commit_rc(srv, c, f->request, rc);
    commit_free(cc);
    return;
  }
  cc->id = ++srv->next_id;
  cc->client = c->id;
  cc->lock = a->id;
  cc->req = f->request;
  rc = zkl_lock_commit_async(a->l, cc->count, cc->ops, cc->results,
                             on_committed, (void *)(uintptr_t)cc->id);
  if (rc != ZKL_OK) {
    reply_commit_rc(srv, c, f->request, rc);
    commit_free(cc);
    return;
  }
  cc->next = srv->commits;
  srv->commits = cc;
  c->n_commits++;
}

/* ------------------------------------------------------ leader watches */

static void on_leader(zkl_leader_watch *w, int rc, const char *id,
                      int64_t token, void *arg) {
  server *srv = srv_;
  awatch *aw;
  (void)w;
  lock_mu(srv);
  for (aw = srv->watches; aw && aw->id != (uint64_t)(uintptr_t)arg;
       aw = aw->next)
    ;
  if (aw) {
    zkl_wbuf b = {0};
    zkl__wire_begin(&b, ZKL_MSG_LEADER_NEWS, 0);
    zkl__wire_i32(&b, aw->handle);
    zkl__wire_i32(&b, rc);
    zkl__wire_str(&b, rc == ZKL_OK ? id : "");
    zkl__wire_i64(&b, rc == ZKL_OK ? token : 0);
    send_frame(srv, aw->c, &b);
  }
  unlock_mu(srv);
}

static void leader_news(server *srv, client *c, int32_t handle, int rc) {
  zkl_wbuf b = {0};
  zkl__wire_begin(&b, ZKL_MSG_LEADER_NEWS, 0);
  zkl__wire_i32(&b, handle);
  zkl__wire_i32(&b, rc);
  zkl__wire_str(&b, "");
  zkl__wire_i64(&b, 0);
  send_frame(srv, c, &b);
}

/* Frees the watch (never blocks; its callback finds no record after). */
static void unwatch(server *srv, awatch *aw) {
  awatch **p;
  for (p = &srv->watches; *p; p = &(*p)->next)
    if (*p == aw) {
      *p = aw->next;
      break;
    }
  if (aw->w)
    zkl_leader_watch_free(aw->w);
  free(aw);
}

static void call_watch_leader(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f);
  const char *name = zkl__wire_get_str(f);
  awatch *aw;
  int rc;
  if (!zkl__wire_done(f))
    return;
  for (aw = srv->watches; aw; aw = aw->next)
    if (aw->c == c && aw->handle == handle) {
      f->bad = true; /* the client numbers its handles: a reuse is a bug */
      return;
    }
  if (!policy_allows(srv->pol, POLICY_LIST, name, c->uid, c->gid)) {
    leader_news(srv, c, handle, ZKL_EDENIED);
    return;
  }
  if (!(aw = calloc(1, sizeof *aw))) {
    leader_news(srv, c, handle, ZKL_ENOMEM);
    return;
  }
  aw->id = ++srv->next_id;
  aw->c = c;
  aw->handle = handle;
  aw->next = srv->watches;
  srv->watches = aw;
  rc = zkl_leader_watch_new(&aw->w, srv->s, name, on_leader,
                            (void *)(uintptr_t)aw->id);
  if (rc != ZKL_OK) {
    aw->w = NULL;
    unwatch(srv, aw);
    leader_news(srv, c, handle, rc);
  }
}

static void call_unwatch(server *srv, client *c, zkl_rframe *f) {
  int32_t handle = zkl__wire_get_i32(f);
  awatch *aw;
  if (!zkl__wire_done(f))
    return;
  for (aw = srv->watches; aw; aw = aw->next)
    if (aw->c == c && aw->handle == handle) {
      unwatch(srv, aw);
      return;
    }
  /* Unknown: it failed to start, and the client did not know yet. */
}

/* A client's watches go with its connection (or the session). */
static int unwatch_client(server *srv, client *c) {
  awatch *aw = srv->watches, *next;
  int n = 0;
  for (; aw; aw = next) {
    next = aw->next;
    if (!c || aw->c == c) {
      unwatch(srv, aw);
      n++;
    }
  }
  return n;
}

/* Before the session they use is closed (under srv->mu). */
static void wait_admin(server *srv) {
  while (srv->n_admin > 0)
    pthread_cond_wait(&srv->admin_end, &srv->mu);
}

static void call_hello(server *srv, client *c, zkl_rframe *f) {
  int32_t version = zkl__wire_get_i32(f);
  char servers[ZKL_SERVERS_MAX];
  zkl_wbuf b = {0};
  const clientid_t *cid;
  zhandle_t *zh;
  if (!zkl__wire_done(f))
    return;
  if (c->hello || version < 1) {
    f->bad = true;
    return;
  }
  c->hello = true;
  /* The lower revision of the two: what both sides speak (wire.h). */
  c->revision = version < ZKL_WIRE_REVISION ? version : ZKL_WIRE_REVISION;
  zh = zkl_session_handle(srv->s);
  cid = zh ? zoo_client_id(zh) : NULL;
  zkl__wire_begin(&b, ZKL_MSG_REPLY, f->request);
  zkl__wire_i32(&b, ZKL_OK);
  zkl__wire_i32(&b, c->revision);
  zkl__wire_i32(&b, zkl_session_timeout(srv->s));
  zkl__wire_i64(&b, cid ? cid->client_id : 0);
  zkl__wire_i32(&b, (int32_t)getpid());
  if (c->revision >= 2) {
    if (zkl_session_get_servers(srv->s, servers, sizeof servers) != ZKL_OK)
      servers[0] = 0;
    zkl__wire_str(&b, servers);
  }
  send_frame(srv, c, &b);
}

/* ZKL_MSG_STATS: the session's counters, at once (they never block). */
static void call_stats(server *srv, client *c, zkl_rframe *f) {
  zkl_session_stats st;
  zkl_wbuf b = {0};
  int rc;
  if (!zkl__wire_done(f))
    return;
  rc = zkl_session_get_stats(srv->s, &st);
  zkl__wire_begin(&b, ZKL_MSG_REPLY, f->request);
  zkl__wire_i32(&b, rc);
  if (rc == ZKL_OK) {
    zkl__wire_i64(&b, (int64_t)st.requests);
    zkl__wire_i64(&b, (int64_t)st.queries);
    zkl__wire_i64(&b, (int64_t)st.heartbeats);
    zkl__wire_i64(&b, (int64_t)st.watch_events);
    zkl__wire_i64(&b, (int64_t)st.disconnects);
    zkl__wire_i64(&b, (int64_t)st.reconnects);
    zkl__wire_i64(&b, (int64_t)st.expiries);
    zkl__wire_i32(&b, (int32_t)st.locks_held);
    zkl__wire_i32(&b, (int32_t)st.locks_waiting);
  }
  send_frame(srv, c, &b);
}

/* ZKL_MSG_WORK: i32 pid, a process that works under the client's locks
 * (zkl_session_add_worker). Its held nodes wait for it once the connection
 * has ended (settle). Workers that have exited make room for new ones. */
static void call_work(server *srv, client *c, zkl_rframe *f) {
  int32_t pid = zkl__wire_get_i32(f);
  int rc, fd = -1, i, kept = 0;
  if (!zkl__wire_done(f))
    return;
  if (c->revision < 3) {
    f->bad = true; /* a client that did not ask for revision 3 */
    return;
  }
  for (i = 0; i < c->n_workers; i++)
    if (procs_exited(c->workers[i]))
      close(c->workers[i]);
    else
      c->workers[kept++] = c->workers[i];
  c->n_workers = kept;
  if (c->n_workers >= CLIENT_WORKERS_MAX)
    rc = ZKL_EINVAL;
  else
    rc = procs_open_worker(pid, c->pid, c->uid, &fd);
  if (rc == ZKL_OK)
    c->workers[c->n_workers++] = fd;
  if (srv->cfg.verbose)
    logf_("pid %ld uid %ld: worker pid %ld %s", (long)c->pid, (long)c->uid,
          (long)pid, rc == ZKL_OK ? "watched" : zkl_strerror(rc));
  reply_rc(srv, c, f->request, rc);
}

/* A client's events on or off; the session's hook follows the count. */
static void set_events(server *srv, client *c, bool on) {
  if (c->events == on)
    return;
  c->events = on;
  srv->n_event_clients += on ? 1 : -1;
  if (srv->s && srv->n_event_clients == (on ? 1 : 0))
    zkl_session_on_event(srv->s, on ? on_event : NULL, NULL);
}

/* ZKL_MSG_EVENTS: i32 on. */
static void call_events(server *srv, client *c, zkl_rframe *f) {
  int32_t on = zkl__wire_get_i32(f);
  if (!zkl__wire_done(f))
    return;
  if (on != 0 && on != 1)
    f->bad = true;
  else
    set_events(srv, c, on == 1);
}

/* Tells every client where the session's servers are, when they moved
 * (the session follows the ensemble): looked at once per turn of the loop,
 * which turns at least once per client's PING. */
static void tell_servers(server *srv) {
  char now[ZKL_SERVERS_MAX];
  client *c;
  if (!srv->s || zkl_session_get_servers(srv->s, now, sizeof now) != ZKL_OK ||
      strcmp(now, srv->servers) == 0)
    return;
  memcpy(srv->servers, now, sizeof now);
  for (c = srv->clients; c; c = c->next) {
    zkl_wbuf b = {0};
    if (!c->hello || c->closing || c->revision < 2)
      continue;
    zkl__wire_begin(&b, ZKL_MSG_SERVERS, 0);
    zkl__wire_str(&b, now);
    send_frame(srv, c, &b);
  }
}

/* One whole frame of c. False: the client broke the protocol. */
static bool handle_frame(server *srv, client *c, const unsigned char *data,
                         size_t size) {
  zkl_rframe f;
  bool ok;
  if (!zkl__wire_open(&f, data, size))
    return false;
  if (f.version != ZKL_WIRE_VERSION || (!c->hello && f.type != ZKL_MSG_HELLO)) {
    zkl__wire_close(&f);
    return false;
  }
  switch (f.type) {
  case ZKL_MSG_HELLO:
    call_hello(srv, c, &f);
    break;
  case ZKL_MSG_NEW:
    call_new(srv, c, &f);
    break;
  case ZKL_MSG_SET:
    call_set(srv, c, &f);
    break;
  case ZKL_MSG_ACQUIRE:
    call_acquire(srv, c, &f);
    break;
  case ZKL_MSG_RELEASE:
    call_release(srv, c, &f);
    break;
  case ZKL_MSG_CANCEL:
    call_cancel(srv, c, &f);
    break;
  case ZKL_MSG_FREE:
    call_free(srv, c, &f);
    break;
  case ZKL_MSG_PING:
    if (!zkl__wire_done(&f)) {
      f.bad = true;
    } else if (c->revision >= 2) {
      zkl_wbuf b = {0}; /* the client's proof that this loop runs */
      zkl__wire_begin(&b, ZKL_MSG_PONG, 0);
      send_frame(srv, c, &b);
    }
    break;
  case ZKL_MSG_BREAK:
  case ZKL_MSG_REVOKE:
  case ZKL_MSG_LIST:
  case ZKL_MSG_FIND:
  case ZKL_MSG_LEADER:
    call_admin(srv, c, &f);
    break;
  case ZKL_MSG_WATCH_LEADER:
    call_watch_leader(srv, c, &f);
    break;
  case ZKL_MSG_UNWATCH:
    call_unwatch(srv, c, &f);
    break;
  case ZKL_MSG_STATS:
    call_stats(srv, c, &f);
    break;
  case ZKL_MSG_EVENTS:
    call_events(srv, c, &f);
    break;
  case ZKL_MSG_COMMIT:
    call_commit(srv, c, &f);
    break;
  case ZKL_MSG_WORK:
    call_work(srv, c, &f);
    break;
  default:
    f.bad = true;
  }
  /* Every call reads all its fields: bytes left over are a broken frame
   * too (the calls return early on them, so they would go unanswered). */
  ok = zkl__wire_done(&f);
  zkl__wire_close(&f);
  return ok;
}

/* ------------------------------------------------------- connections */

/* The lease margin of the agent's library (the default rule: the agent
 * sets none), which its clients assume as well (cli/lease.c): a client's
 * last deadline plus this is when nothing of it may still act. */
static int margin_ms(server *srv) {
  int t = srv->s ? zkl_session_timeout(srv->s) : srv->cfg.session_timeout_ms;
  int m = t / 10;
  return m < 100 ? 100 : m > 2000 ? 2000 : m;
}

/* Whether a read/write lock's pair, or a lock alone, keeps its node for
 * the client (either side). */
static bool unit_kept(const alock *a) {
  return a->kept || (a->pair && a->pair->kept);
}

/* Whether everything of c that could act under its locks has stopped: its
 * process closed the connection or exited, and every worker it named has
 * exited. */
static bool work_stopped(const client *c) {
  int i;
  if (!c->peer_done)
    return false;
  for (i = 0; i < c->n_workers; i++)
    if (!procs_exited(c->workers[i]))
      return false;
  return true;
}

/* Whether the newest deadline c was told has run out by the margin: its
 * own clock has ended every hold, and zklock's keeper has stopped its
 * command (by the deadline plus half the margin). A client never told a
 * deadline never held. */
static bool lease_over(server *srv, const client *c, int64_t now) {
  return now > c->lease_sent + margin_ms(srv);
}

/* Unlinks and frees c, whose records are all gone. */
static void forget_client(server *srv, client *c) {
  client **p;
  int i;
  for (p = &srv->clients; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  srv->n_clients--;
  if (c->fd >= 0)
    close(c->fd);
  if (c->pidfd >= 0)
    close(c->pidfd);
  for (i = 0; i < c->n_workers; i++)
    close(c->workers[i]);
  free(c->in);
  free(c->out);
  free(c);
}

/* Frees c's records: all of them, or those whose node is not the client's
 * hold (waiters, never made). Restarts after each free: freeing a read
 * side frees its write side too, wherever it is in the list. */
static int free_records(server *srv, client *c, bool all) {
  alock *a;
  int n = 0;
again:
  for (a = c->locks; a; a = a->next)
    if (!a->write_side && (all || !unit_kept(a))) {
      free_record(srv, a);
      n++;
      goto again;
    }
  return n;
}

/* The connection of c is over (why: for the log). Its waiters go at once;
 * its held nodes wait for settle(); c itself is forgotten once nothing of
 * it is left. */
static void end_client(server *srv, client *c, const char *why) {
  int n_freed, n_watches;
  if (c->ended)
    return;
  c->ended = c->dead = true;
  c->closing = false;
  set_events(srv, c, false);
  n_watches = unwatch_client(srv, c);
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  free(c->in);
  free(c->out);
  c->in = c->out = NULL;
  c->in_len = c->in_cap = c->out_len = c->out_off = c->out_cap = 0;
  n_freed = free_records(srv, c, work_stopped(c));
  if (srv->cfg.verbose)
    logf_("pid %ld uid %ld: gone (%s), %d lock%s and %d leader watch%s "
          "freed%s",
          (long)c->pid, (long)c->uid, why, n_freed, n_freed == 1 ? "" : "s",
          n_watches, n_watches == 1 ? "" : "es",
          c->locks ? "; its held nodes wait for its processes or its lease"
                   : "");
  if (!c->locks)
    forget_client(srv, c);
}

/* Lets go of what the rule allows (serve.c's header): the held nodes of an
 * ended connection once its work stopped or its lease ran out; while the
 * agent stops, a live client's nodes once its lease ran out (it was told,
 * and did not release). */
static void settle(server *srv) {
  client *c, *next;
  int64_t now = now_ms();
  for (c = srv->clients; c; c = next) {
    next = c->next;
    if (c->ended) {
      bool stopped = work_stopped(c);
      if (!stopped && !lease_over(srv, c, now))
        continue;
      if (srv->cfg.verbose)
        logf_("pid %ld: %s: its held nodes go", (long)c->pid,
              stopped ? "its processes are gone"
                      : "its lease has run out, processes or not");
      free_records(srv, c, true);
      forget_client(srv, c);
    } else if (srv->stopping && c->locks && lease_over(srv, c, now)) {
      int n = free_records(srv, c, true);
      if (n > 0)
        logf_("pid %ld: did not let go before its lease ran out: %d lock%s "
              "freed",
              (long)c->pid, n, n == 1 ? "" : "s");
    }
  }
}

/* Whether any client's node still waits for its holder (the stop's end). */
static bool anything_kept(server *srv) {
  client *c;
  alock *a;
  for (c = srv->clients; c; c = c->next)
    for (a = c->locks; a; a = a->next)
      if (a->kept)
        return true;
  return false;
}

/* The stop begins: every holder is told its hold is lost (ZKL_LOST_AGENT)
 * and no newer deadline; every waiter's attempt is canceled (told
 * ZKL_EAGENT). The held nodes stay until settle() lets them go. */
static void begin_stop(server *srv) {
  client *c;
  alock *a;
  int holders = 0;
  srv->stopping = true;
  for (c = srv->clients; c; c = c->next) {
    bool told = false;
    if (c->ended)
      continue;
    for (a = c->locks; a; a = a->next) {
      if (a->holds > 0) {
        tell_lost(srv, a, ZKL_LOST_AGENT);
        told = true;
      }
      if (a->acquiring && a->l)
        zkl_lock_cancel(a->l); /* its callback answers ZKL_EAGENT */
    }
    holders += told;
  }
  logf_("stopping: %d client%s told to let go; each held node goes at its "
        "release, once its holder's processes are gone, or when its lease "
        "has run out",
        holders, holders == 1 ? "" : "s");
}

/* Takes the connections waiting, at most ACCEPTS_PER_TURN of them: the
 * rest wait in the listen backlog for the next turn, so that a process
 * connecting without pause cannot keep the loop from everyone else. */
#define ACCEPTS_PER_TURN 64
static void accept_clients(server *srv) {
  int turn;
  for (turn = 0; turn < ACCEPTS_PER_TURN; turn++) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    client *c;
    int fd = accept4(srv->cfg.listen_fd, NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
          errno != ECONNABORTED)
        logf_("accept: %s", strerror(errno));
      return;
    }
    if (srv->n_clients >= CLIENTS_MAX ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        !(c = calloc(1, sizeof *c))) {
      close(fd);
      continue;
    }
    c->id = ++srv->next_client;
    c->fd = fd;
    c->last_heard = now_ms();
    c->pid = cred.pid;
    c->pidfd = procs_peer_pidfd(fd, cred.pid);
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->next = srv->clients;
    srv->clients = c;
    srv->n_clients++;
    if (srv->cfg.verbose)
      logf_("pid %ld uid %ld gid %ld: connected", (long)c->pid, (long)c->uid,
            (long)c->gid);
    if (srv->session_over)
      send_bye(srv, c, ZKL_EEXPIRED);
    else if (srv->stopping)
      send_bye(srv, c, ZKL_ECLOSED);
  }
}

/* Reads one chunk of what c sent, and serves the whole frames in it. One
 * chunk per turn of the loop, not all there is: a client that writes
 * faster than its frames are served would otherwise keep the loop here for
 * as long as it writes, and every other client would wait, their leases
 * unrelayed (the loop's poll is level-triggered: the rest is read next
 * turn, after the others were served). False: drop c. */
static bool read_client(server *srv, client *c) {
  ssize_t n;
  size_t at = 0;
  if (c->in_cap - c->in_len < 65536) {
    size_t cap = c->in_len + 65536;
    unsigned char *d = realloc(c->in, cap);
    if (!d)
      return false;
    c->in = d;
    c->in_cap = cap;
  }
  n = recv(c->fd, c->in + c->in_len, 65536, 0);
  if (n == 0) {
    /* Every copy of the socket is closed: its process let go (a close) or
     * is exiting, and a forked child holds it no longer. */
    c->peer_done = true;
    return false;
  }
  if (n < 0)
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  c->in_len += (size_t)n;
  c->last_heard = now_ms();
  if (c->silent) {
    c->silent = false;
    if (srv->cfg.verbose)
      logf_("pid %ld: heard from again", (long)c->pid);
  }
  for (;;) {
    long size = zkl__wire_frame_size(c->in + at, c->in_len - at);
    if (size < 0) {
      send_bye(srv, c, ZKL_EINVAL);
      return true;
    }
    if (size == 0 || (size_t)size > c->in_len - at)
      break;
    if (!handle_frame(srv, c, c->in + at, (size_t)size)) {
      if (srv->cfg.verbose)
        logf_("pid %ld: a malformed frame: cut off", (long)c->pid);
      send_bye(srv, c, ZKL_EINVAL);
      return true;
    }
    at += (size_t)size;
    yield_mu(srv); /* the callbacks' answers go out between frames */
    if (c->closing)
      return true;
  }
  memmove(c->in, c->in + at, c->in_len - at);
  c->in_len -= at;
  /* Keep the buffer near one frame: shrink after a big one. */
  if (c->in_cap > 2 * 65536 && c->in_len < 65536) {
    unsigned char *d = realloc(c->in, 65536 * 2);
    if (d) {
      c->in = d;
      c->in_cap = 65536 * 2;
    }
  }
  return true;
}

/* Writes what is queued for c. False: drop it. */
static bool write_client(client *c) {
  while (c->out_off < c->out_len) {
    ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c->out_off += (size_t)n;
  }
  c->out_off = c->out_len = 0;
  return true;
}

/* Tells each holding client the deadline of its holds whenever it moved.
 *
 * A holding client not heard from in a session timeout (it pings every
 * third of one) is frozen or hung, as a process whose own session the
 * servers expire: it is told no newer deadline, and once the newest it was
 * told has passed by the margin, by this host's clock, which is its clock,
 * it has lost its holds by its own rule and zklock's keeper has stopped its
 * command (by the deadline plus half the margin), so its locks are freed
 * for the next. Not at the deadline itself: the keeper of a frozen zklock
 * acts after it. */
static void relay_lease(server *srv) {
  client *c;
  int64_t deadline = 0, now = now_ms();
  bool asked = false;
  int t = zkl_session_timeout(srv->s);
  for (c = srv->clients; c; c = c->next) {
    if (!c->holding || c->closing || c->ended)
      continue;
    if (t > 0 && now - c->last_heard > t) {
      if (!c->silent && srv->cfg.verbose)
        logf_("pid %ld: silent for %lld ms: its locks go once its lease "
              "has passed",
              (long)c->pid, (long long)(now - c->last_heard));
      c->silent = true;
      /* Cut off without a word: a frozen client reads nothing, and its
       * locks must not wait for its socket to drain. */
      if (lease_over(srv, c, now))
        c->dead = true;
      continue;
    }
    if (!asked) {
      deadline = zkl_session_lease_deadline(srv->s);
      asked = true;
    }
    /* 0: the lease lapsed (the holds' LOST frames follow); the client
     * keeps the last deadline it has, and acts on it. */
    if (deadline > 0 &&
        (deadline < c->lease_sent || deadline >= c->lease_sent + LEASE_STEP_MS))
      send_lease(srv, c, deadline);
  }
}

/* After an expiry: every client is told and let go, the old session
 * closed, and a new one opened. An open that fails (the ensemble in an
 * election, or out of reach) is tried again every second until it works or
 * the agent is stopped: the agent does not give up on the host (it used to
 * exit, and a fault run found it gone). False: stopped first. */
static bool reopen_session(server *srv, volatile int *stop, int wake_fd) {
  zkl_session_options o;
  zkl_session *s;
  client *c;
  int rc, tries = 0;
  client *next;
  for (c = srv->clients; c; c = c->next)
    if (!c->closing && !c->ended)
      send_bye(srv, c, ZKL_EEXPIRED);
  /* The nodes went with the session: nothing is left to wait for. */
  for (c = srv->clients; c; c = next) {
    next = c->next;
    write_client(c);
    while (c->locks)
      free_record(srv, c->locks);
    if (c->ended)
      forget_client(srv, c);
  }
  zkl_session_options_init(&o);
  o.hosts = srv->cfg.hosts;
  o.session_timeout_ms = srv->cfg.session_timeout_ms;
  o.server_tick_ms = srv->cfg.server_tick_ms;
  o.flags = srv->cfg.open_flags;
  o.on_state = on_state;
  o.on_event = srv->n_event_clients > 0 ? on_event : NULL;
  unwatch_client(srv, NULL);
  wait_admin(srv); /* they end soon: the session they ask is over */
  pthread_mutex_unlock(&srv->mu);
  if (srv->s)
    zkl_session_close(srv->s, NULL);
  srv->s = NULL;
  while ((rc = auth_open(&s, &o, srv->cfg.auth)) != ZKL_OK) {
    struct pollfd p = {wake_fd, POLLIN, 0};
    if (tries++ == 0)
      logf_("the session expired and a new one failed: %s; trying again "
            "every second",
            zkl_strerror(rc));
    if (!*stop && poll(&p, 1, 1000) > 0) {
      char buf[64]; /* a signal's byte: SIGHUP's reload waits for a session */
      while (read(wake_fd, buf, sizeof buf) > 0)
        ;
    }
    if (*stop) {
      pthread_mutex_lock(&srv->mu);
      return false;
    }
  }
  pthread_mutex_lock(&srv->mu);
  logf_("the session expired: every client was told; a new one is open");
  srv->s = s;
  srv->session_over = false;
  return true;
}

/* What a pollfd of the loop watches, besides its first three. */
enum { WATCH_SOCKET, WATCH_PEER, WATCH_WORKER };

int server_run(const server_config *cfg, volatile int *stop,
               volatile int *reload, const char *policy_path, int wake_fd) {
  server *srv = calloc(1, sizeof *srv);
  struct pollfd *pfd = NULL;
  client **who = NULL;
  unsigned char *what = NULL;
  size_t room = 0;
  int status = 0;
  if (!srv)
    return 1;
  pthread_mutex_init(&srv->mu, NULL);
  pthread_cond_init(&srv->admin_end, NULL);
  pthread_cond_init(&srv->mu_served, NULL);
  srv->cfg = *cfg;
  srv->s = cfg->session;
  srv->pol = cfg->pol;
  srv->wake_rd = wake_fd;
  srv->wake_wr = -1;
  {
    /* The callbacks wake the loop through a pipe of its own. */
    int p[2];
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
      free(srv);
      return 1;
    }
    srv->wake_rd = p[0];
    srv->wake_wr = p[1];
  }
  srv_ = srv;
  zkl_session_on_state(srv->s, on_state, NULL);
  pthread_mutex_lock(&srv->mu);
  for (;;) {
    client *c, *next;
    size_t n = 0, i, need = 3;
    int timeout = -1, k;
    if (*stop && !srv->stopping)
      begin_stop(srv);
    if (srv->stopping && !anything_kept(srv))
      break; /* every holder let go, or its lease ran out */
    if (*reload) {
      char err[512] = "";
      policy *p;
      *reload = 0;
      if ((p = policy_load(policy_path, getuid(), err, sizeof err))) {
        policy_free(srv->pol);
        srv->pol = p;
        logf_("policy reloaded%s%s", policy_path ? " from " : "",
              policy_path ? policy_path : "");
      } else {
        logf_("policy not reloaded, the old one stays: %s", err);
      }
    }
    /* An expired session took every node with it: a stop has nothing
     * left to wait for. */
    if ((srv->session_over || !srv->s) &&
        (srv->stopping || !reopen_session(srv, stop, wake_fd)))
      break;
    for (c = srv->clients; c; c = c->next)
      need += 2 + (size_t)c->n_workers;
    if (room < need) {
      room = need + 64;
      free(pfd);
      free(who);
      free(what);
      pfd = calloc(room, sizeof *pfd);
      who = calloc(room, sizeof *who);
      what = calloc(room, sizeof *what);
      if (!pfd || !who || !what) {
        status = 1;
        break;
      }
    }
    pfd[n].fd = srv->wake_rd;
    pfd[n++].events = POLLIN;
    pfd[n].fd = wake_fd;
    pfd[n++].events = POLLIN;
    pfd[n].fd = cfg->listen_fd;
    pfd[n++].events = POLLIN;
    for (c = srv->clients; c; c = c->next) {
      if (!c->ended) {
        pfd[n].fd = c->fd;
        pfd[n].events = (c->closing ? 0 : POLLIN) |
                        (c->out_len > c->out_off ? POLLOUT : 0);
        pfd[n].revents = 0;
        what[n] = WATCH_SOCKET;
        who[n++] = c;
      }
      if (c->pidfd >= 0 && !c->peer_done) {
        pfd[n].fd = c->pidfd;
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        what[n] = WATCH_PEER;
        who[n++] = c;
      }
      /* A worker's end matters once the connection has: it may free the
       * held nodes that wait for it. */
      for (k = 0; c->ended && k < c->n_workers; k++) {
        pfd[n].fd = c->workers[k];
        pfd[n].events = POLLIN;
        pfd[n].revents = 0;
        what[n] = WATCH_WORKER;
        who[n++] = c;
      }
      /* The deadlines: the lease's relay, an ended connection's or a
       * stop's held nodes waiting for a lease to run out. */
      if (c->holding || c->ended || (srv->stopping && c->locks))
        timeout = LEASE_STEP_MS;
    }
    pthread_mutex_unlock(&srv->mu);
    if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
      logf_("poll: %s", strerror(errno));
      pthread_mutex_lock(&srv->mu);
      status = 1;
      break;
    }
    pthread_mutex_lock(&srv->mu);
    yield_mu(srv);
    if (pfd[0].revents) {
      char buf[256];
      while (read(srv->wake_rd, buf, sizeof buf) > 0)
        ;
    }
    if (pfd[1].revents) {
      char buf[256];
      while (read(wake_fd, buf, sizeof buf) > 0)
        ;
    }
    if (pfd[2].revents & POLLIN)
      accept_clients(srv);
    for (i = 3; i < n; i++) {
      c = who[i];
      if (what[i] == WATCH_PEER && pfd[i].revents) {
        /* Its process has exited, whoever still holds the socket (a
         * forked child): the connection is over. */
        c->peer_done = true;
        c->dead = true;
        continue;
      }
      if (what[i] != WATCH_SOCKET || c->dead)
        continue;
      if ((pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) && !c->closing &&
          !read_client(srv, c))
        c->dead = true;
      else if (pfd[i].revents & (POLLHUP | POLLERR) && c->closing)
        c->dead = true;
    }
    for (c = srv->clients; c; c = c->next)
      if (!c->dead && c->out_len > c->out_off && !write_client(c))
        c->dead = true;
    for (c = srv->clients; c; c = next) {
      next = c->next;
      if (c->ended)
        continue;
      if (c->dead)
        end_client(srv, c,
                   c->silent      ? "silent"
                   : c->peer_done ? "closed, or its process exited"
                                  : "closed");
      else if (c->closing && c->out_len == c->out_off)
        end_client(srv, c, "cut off");
    }
    settle(srv);
    if (srv->s && !srv->session_over && !srv->stopping) {
      relay_lease(srv);
      tell_servers(srv);
    }
  }
  /* Stopped: every holder let go, or its lease ran out (or the session
   * expired, taking every node with it). The rest is told goodbye. */
  for (;;) {
    client *c = srv->clients;
    if (!c)
      break;
    if (!c->ended) {
      if (!c->closing)
        send_bye(srv, c, ZKL_ECLOSED);
      write_client(c);
    }
    end_client(srv, c, "the agent stops");
    if (srv->clients == c) { /* ended with nodes kept: none by now */
      free_records(srv, c, true);
      forget_client(srv, c);
    }
  }
  /* A break may wait out its grace: the session must outlive it (the
   * library has no way to cut a blocking call short), so a stop waits for
   * the running ones, a break for at most its grace or its holder's
   * release. The clients were told and their locks freed already. */
  wait_admin(srv);
  pthread_mutex_unlock(&srv->mu);
  /* Closing runs the last callbacks (the state's CLOSED, a guarded
   * write's answer): srv must live. */
  if (srv->s)
    zkl_session_close(srv->s, NULL);
  srv_ = NULL;
  while (srv->commits) { /* none: each was answered by the close */
    commit_call *cc = srv->commits;
    srv->commits = cc->next;
    commit_free(cc);
  }
  close(srv->wake_rd);
  close(srv->wake_wr);
  policy_free(srv->pol);
  free(pfd);
  free(who);
  free(what);
  free(srv);
  return status;
}
