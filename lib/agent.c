/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.c - sessions through zklockd (agent.h; the protocol: wire.h and
 * docs/agent.md).
 *
 * Three threads per agent session (docs/agent.md, "Processes and threads"):
 *   - the I/O thread reads the agent's frames, writes what the user's
 *     threads could not write at once, pings, keeps the lease the agent
 *     relays, and takes the agent for gone. It never runs user code, so a
 *     callback that blocks can neither silence this process towards the
 *     agent (which frees the locks of a client it does not hear) nor hold
 *     back the lease clock;
 *   - the callback thread runs the user's callbacks in order, with no lock
 *     held;
 *   - the lost thread runs the lost notices (and their LOST events), so
 *     that a loss is told at once whatever the callback thread is doing, as
 *     the library's timer thread tells a lease's loss direct.
 * Both threads that run user code are this session's completion threads:
 * a blocking call made there fails with ZKL_EDEADLK. No callback overtakes
 * a lost notice queued before it, so a loss is still told before a later
 * grant of the same lock; a lost notice may overtake callbacks queued
 * before it (its point). s->mu guards everything here.
 *
 * The lease: each grant and each later ZKL_MSG_LEASE carries the agent's
 * deadline, a CLOCK_MONOTONIC time, which every process of the host reads
 * alike. When it passes with no newer one, every held lock is lost
 * (ZKL_LOST_LEASE_EXPIRED), whatever the agent is doing: frozen, starved,
 * or its socket silent. The agent's own lease ends at that deadline too,
 * before its session can have expired (docs/correctness.md), so no other
 * contender can have been granted yet.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* accept4, pipe2, struct ucred */
#endif
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "engine.h"
#include "wire.h"
#ifdef ZKL_TEST_HOOKS
#include "internal.h" /* zkl__test_agent_hold_reads */
#endif

typedef struct zkl_note zkl_note;
typedef struct zkl_pending zkl_pending;
typedef struct zkl_rwatch zkl_rwatch;

/* A thread that runs queued callbacks (notes) one at a time, in order. */
typedef struct zkl_runner {
  zkl_agent *a;
  zkl_note *notes, **tail;
  pthread_cond_t cond; /* a note queued, a lost notice run, or the end */
  pthread_t thread;
  bool started;
  bool lost;        /* the lost thread (else the callback thread) */
  uint64_t running; /* the note it runs now (its seq), 0: none */
} zkl_runner;

struct zkl_agent {
  zkl_session *s;
  int fd;
  int wake_rd, wake_wr;
  pthread_t io;
  bool io_started;
  bool io_done;        /* the I/O thread ended: no note comes after */
  zkl_runner calls;    /* the callback thread */
  zkl_runner losses;   /* the lost thread */
  uint64_t next_seq;   /* the order of notes across the two */
  pthread_cond_t cond; /* a reply came, or the agent went */
  unsigned char *out;
  size_t out_len, out_off, out_cap;
  unsigned char *in;
  size_t in_len, in_cap;
  uint32_t next_req;
  int32_t next_handle;
  zkl_link pending;
  zkl_link locks;
  zkl_link watches;  /* leader watches (zkl_rwatch) */
  unsigned holding;  /* locks with holds > 0 */
  int64_t deadline;  /* the agent's lease deadline; 0: none */
  int dead;          /* 0, or what calls fail with: ZKL_EAGENT, ZKL_EEXPIRED */
  bool closing;      /* zkl_session_close() began */
  bool stop;         /* the threads end */
  bool detached;     /* closed from a callback: the callback thread frees */
  int timeout_ms;
  int revision;      /* the protocol's the agent speaks (HELLO; wire.h) */
  int64_t next_ping; /* when the thread tells the agent it is alive */
  int64_t unanswered; /* when the oldest PING with no frame since left */
  zkl_state_cb state_cb;
  void *state_arg;
  zkl_event_cb event_cb; /* zkl_session_on_event(): told here, see emit */
  void *event_arg;
  char *servers; /* the agent's connect string (HELLO, then SERVERS) */
#ifdef ZKL_TEST_HOOKS
  bool test_hold_reads; /* zkl__test_agent_hold_reads() (internal.h) */
#endif
  unsigned refs; /* the user's (until close) and each lock's */
};

struct zkl_remote {
  zkl_agent *a;
  zkl_lock *l; /* the object this is the remote part of */
  int32_t handle;
  int kind;
  int holds;
  int64_t token;
  int64_t lost_token; /* the token of the latest hold lost */
  bool lost; /* since the last acquire: the next release says ZKL_ELOST */
  bool break_mark; /* a REVOKED of this hold was a break's (revision 3) */
  int64_t started_ms, granted_ms; /* of the latest attempt: for events */
  bool ever_acquired; /* an ACQUIRE was sent: its layout is settled */
  bool acquiring, releasing;
  bool freed;
  unsigned refs; /* the user's, each pending call's, each note's */
  char *paths;
  const char *other_kind;
  char *refused;
  zkl_lost_cb lost_cb;
  void *lost_arg;
  zkl_revoke_cb revoke_cb;
  void *revoke_arg;
  zkl_link link;
};

struct zkl_pending {
  zkl_link link;
  uint32_t req;
  int type;
  zkl_lock *l; /* a reference, or NULL */
  zkl_acquire_cb acquire_cb;
  zkl_release_cb release_cb;
  zkl_commit_cb commit_cb;
  void *arg;
  bool waiter; /* a blocking caller waits on a->cond for done */
  bool again;  /* an acquire of a lock held already: no attempt, no event */
  zkl_commit_out commit; /* a COMMIT's: where its results go (its out) */
  zkl_agent_parse parse; /* reads the reply's fields after rc, or NULL */
  void *out;             /* parse's */
  bool done;
  int rc;
  int64_t token;
};

/* A leader watch through the agent: what zkl_leader_watch_new() returns
 * for such a session (zkl_leader_watch_free() knows it by the registry
 * below, never by its contents). */
struct zkl_rwatch {
  zkl_agent *a;
  int32_t handle;
  zkl_leader_cb cb;
  void *arg;
  bool freed, over; /* freed by the user; ended (no news after) */
  unsigned refs;    /* the user's, each note's */
  zkl_link link;    /* in a->watches */
  zkl_rwatch *reg_next;
};

enum {
  N_ACQUIRE,
  N_RELEASE,
  N_LOST,
  N_REVOKE,
  N_STATE,
  N_LEADER,
  N_EVENT,
  N_COMMIT
};
struct zkl_note {
  zkl_note *next;
  uint64_t seq; /* queued after every note of a lower one */
  int kind;
  zkl_lock *l; /* a reference, or NULL */
  int rc;
  int64_t token;
  zkl_acquire_cb acquire_cb;
  zkl_release_cb release_cb;
  zkl_lost_cb lost_cb;
  zkl_revoke_cb revoke_cb;
  zkl_state_cb state_cb;
  zkl_commit_cb commit_cb;
  void *arg;
  zkl_rwatch *w; /* N_LEADER: a reference */
  char *id;      /* N_LEADER: the leader; N_EVENT: the event's strings */
  zkl_event_cb event_cb;
  zkl_event ev; /* N_EVENT; ev.lock is n->l */
};

static zkl_agent *agent_of(const zkl_session *s) { return s->agent; }

/* ------------------------------------------------------------- objects */

static void agent_free(zkl_agent *a) {
  zkl_session *s = a->s;
  if (a->fd >= 0)
    close(a->fd);
  close(a->wake_rd);
  close(a->wake_wr);
  free(a->out);
  free(a->in);
  free(a->servers);
  pthread_cond_destroy(&a->cond);
  pthread_cond_destroy(&a->calls.cond);
  pthread_cond_destroy(&a->losses.cond);
  pthread_mutex_destroy(&s->mu);
  free(a);
  free(s);
}

static void agent_unref_locked(zkl_agent *a, bool *freed) {
  *freed = --a->refs == 0 && !a->detached;
}

static void lock_ref_locked(zkl_lock *l) { l->remote->refs++; }

/* Drops a reference; the last frees l, and may free the session (then
 * *gone is set and s->mu was released and destroyed). */
static void lock_unref_locked(zkl_lock *l, bool *gone) {
  zkl_remote *r = l->remote;
  zkl_agent *a = r->a;
  bool free_agent = false;
  *gone = false;
  if (--r->refs > 0)
    return;
  zkl__list_remove(&r->link);
  free(r->paths);
  free(r->refused);
  free(r);
  free(l->name);
  free(l);
  agent_unref_locked(a, &free_agent);
  if (free_agent) {
    pthread_mutex_unlock(&a->s->mu);
    agent_free(a);
    *gone = true;
  }
}

static void set_holds(zkl_remote *r, int holds) {
  if ((r->holds > 0) != (holds > 0))
    r->a->holding += holds > 0 ? 1u : (unsigned)-1;
  r->holds = holds;
  if (holds == 0) {
    r->token = 0;
    free(r->paths);
    r->paths = NULL;
  }
}

/* The rc calls get once the agent is gone or the session closing. */
static int gone_rc(const zkl_agent *a) {
  if (a->closing)
    return ZKL_ECLOSED;
  return a->dead;
}

/* ------------------------------------------------------------ frames */

static void wake(zkl_agent *a) {
  char x = 1;
  ssize_t n = write(a->wake_wr, &x, 1);
  (void)n;
}

/* Writes what is queued, as far as the socket takes it now. */
static void flush_locked(zkl_agent *a) {
  while (a->fd >= 0 && a->out_off < a->out_len) {
    ssize_t n = send(a->fd, a->out + a->out_off, a->out_len - a->out_off,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        a->out_off = a->out_len; /* the reader hears the end */
      break;
    }
    a->out_off += (size_t)n;
  }
  if (a->out_off == a->out_len)
    a->out_off = a->out_len = 0;
  else
    wake(a); /* the thread waits for room */
}

/* Queues a finished frame and sends what it can: never blocks. */
static int send_locked(zkl_agent *a, zkl_wbuf *b) {
  if (!zkl__wire_end(b)) {
    /* Too big for a frame is the caller's arguments (the same would
     * always fail); else memory ran out. */
    int rc = b->failed && !b->too_big ? ZKL_ENOMEM : ZKL_EINVAL;
    zkl__wire_free(b);
    return rc;
  }
  if (a->out_len + b->len > a->out_cap) {
    size_t cap = a->out_cap ? a->out_cap : 4096;
    unsigned char *d;
    while (cap < a->out_len + b->len)
      cap *= 2;
    if (!(d = realloc(a->out, cap))) {
      zkl__wire_free(b);
      return ZKL_ENOMEM;
    }
    a->out = d;
    a->out_cap = cap;
  }
  memcpy(a->out + a->out_len, b->data, b->len);
  a->out_len += b->len;
  zkl__wire_free(b);
  flush_locked(a);
  return ZKL_OK;
}

/* --------------------------------------------------------------- notes */

/* Lost notices and their events go to the lost thread, as the library's
 * timer thread runs a lease's direct; everything else to the callback
 * thread. */
static bool is_loss(const zkl_note *n) {
  return n->kind == N_LOST ||
         (n->kind == N_EVENT && n->ev.type == ZKL_EVENT_LOST);
}

static void note_locked(zkl_agent *a, zkl_note *n) {
  zkl_runner *q = is_loss(n) ? &a->losses : &a->calls;
  if (n->l)
    lock_ref_locked(n->l);
  n->next = NULL;
  n->seq = ++a->next_seq;
  *q->tail = n;
  q->tail = &n->next;
  pthread_cond_signal(&q->cond);
}

static void emit_locked(zkl_agent *a, const zkl_event *ev);

static void note_state_locked(zkl_agent *a, zkl_state state) {
  zkl_note *n;
  if (state != ZKL_STATE_CLOSED) {
    zkl_event ev = {0};
    ev.type = ZKL_EVENT_SESSION;
    ev.reason = state;
    emit_locked(a, &ev);
  }
  if (!a->state_cb || !(n = calloc(1, sizeof *n)))
    return;
  n->kind = N_STATE;
  n->rc = state;
  n->state_cb = a->state_cb;
  n->arg = a->state_arg;
  note_locked(a, n);
}

static void rwatch_unref_locked(zkl_rwatch *w) {
  if (--w->refs > 0)
    return;
  w->a->refs--; /* never the last: the running thread's session has one */
  free(w);
}

/* News of a watch: its callback queued (not after its end). */
static void note_leader_locked(zkl_agent *a, zkl_rwatch *w, int rc,
                               const char *id, int64_t token) {
  zkl_note *n;
  if (w->over || w->freed)
    return;
  if (rc != ZKL_OK && rc != ZKL_ENOTHELD)
    w->over = true;
  if (!(n = calloc(1, sizeof *n)) || !(n->id = strdup(id ? id : ""))) {
    free(n);
    return;
  }
  n->kind = N_LEADER;
  n->rc = rc;
  n->token = token;
  n->w = w;
  w->refs++;
  note_locked(a, n);
}

/* The event hook (zkl_session_on_event) through the agent. This process
 * tells what it sees itself, as the library does direct: its attempts'
 * ends from the agent's replies (timed by this clock, so wait_ms counts
 * the trip to the agent too), its losses as it decides them (the agent's
 * LOST, its own clock's lease, the agent gone), the session's states. The
 * agent tells only what it alone knows: a waiter's place in its queue
 * (ZKL_MSG_EVENT), and the ensemble it follows (ZKL_MSG_SERVERS). */
static void emit_locked(zkl_agent *a, const zkl_event *ev) {
  const char *parts[4] = {ev->name, ev->node, ev->waiting_for, ev->servers};
  const char **into[4];
  size_t room = 0;
  zkl_note *n;
  char *at;
  int i;
  if (!a->event_cb)
    return;
  for (i = 0; i < 4; i++)
    room += parts[i] ? strlen(parts[i]) + 1 : 0;
  if (!(n = calloc(1, sizeof *n)) || !(n->id = malloc(room + 1))) {
    free(n);
    zkl__log("out of memory: event %d not reported", ev->type);
    return;
  }
  n->kind = N_EVENT;
  n->l = ev->lock;
  n->event_cb = a->event_cb;
  n->arg = a->event_arg;
  n->ev = *ev;
  into[0] = &n->ev.name;
  into[1] = &n->ev.node;
  into[2] = &n->ev.waiting_for;
  into[3] = &n->ev.servers;
  for (i = 0, at = n->id; i < 4; i++) {
    *into[i] = NULL;
    if (parts[i]) {
      strcpy(at, parts[i]);
      *into[i] = at;
      at += strlen(at) + 1;
    }
  }
  note_locked(a, n);
}

/* The child name of r's first node into buf, or NULL (a multi-lock has
 * none of its own; nothing held). */
static const char *own_node(const zkl_remote *r, char *buf, size_t len) {
  const char *p = r->paths, *slash;
  size_t n;
  if (!p || !*p || r->kind == ZKL_AGENT_MULTI)
    return NULL;
  n = strcspn(p, " ");
  for (slash = p + n; slash > p && slash[-1] != '/'; slash--)
    ;
  n -= (size_t)(slash - p);
  if (n + 1 > len)
    return NULL;
  memcpy(buf, slash, n);
  buf[n] = 0;
  return buf;
}

/* An event of lock l: hold_ms for RELEASED and LOST, else wait_ms. */
static void lock_event_locked(zkl_agent *a, zkl_lock *l, int type, int reason,
                              int64_t token, const char *node,
                              const char *waiting_for, int position) {
  zkl_remote *r = l->remote;
  zkl_event ev = {0};
  int64_t now = zkl__now_ms();
  if (!a->event_cb)
    return;
  ev.type = (zkl_event_type)type;
  ev.lock = l;
  ev.name = l->name;
  ev.node = node;
  ev.waiting_for = waiting_for;
  ev.position = position;
  ev.reason = reason;
  ev.token = token;
  if (type == ZKL_EVENT_RELEASED || type == ZKL_EVENT_LOST)
    ev.hold_ms = now - r->granted_ms;
  else
    ev.wait_ms = now - r->started_ms;
  emit_locked(a, &ev);
}

/* How an acquire ended, as the library tells it direct. */
static void acquire_event_locked(zkl_agent *a, zkl_lock *l, int rc,
                                 int64_t token) {
  char node[ZKL_PATH_MAX];
  if (rc == ZKL_OK) {
    l->remote->granted_ms = zkl__now_ms();
    lock_event_locked(a, l, ZKL_EVENT_GRANTED, 0, token,
                      own_node(l->remote, node, sizeof node), NULL, 0);
  } else if (rc == ZKL_ETIMEDOUT) {
    lock_event_locked(a, l, ZKL_EVENT_TIMED_OUT, 0, 0, NULL, NULL, 0);
  } else if (rc == ZKL_ECANCELED || rc == ZKL_ECLOSED) {
    lock_event_locked(a, l, ZKL_EVENT_CANCELED, rc, 0, NULL, NULL, 0);
  } else if (rc != ZKL_EINPROGRESS) {
    lock_event_locked(a, l, ZKL_EVENT_FAILED, rc, 0, NULL, NULL, 0);
  }
}

int zkl__remote_on_event(zkl_session *s, zkl_event_cb cb, void *arg) {
  zkl_agent *a = agent_of(s);
  int rc = ZKL_OK;
  pthread_mutex_lock(&s->mu);
  if (a->closing) {
    rc = ZKL_ECLOSED;
  } else {
    /* Only a hook that listens has the agent tell it of queueing. */
    if (!a->event_cb != !cb && a->fd >= 0 && !a->dead && a->revision >= 2) {
      zkl_wbuf b = {0};
      zkl__wire_begin(&b, ZKL_MSG_EVENTS, 0);
      zkl__wire_i32(&b, cb != NULL);
      rc = send_locked(a, &b);
    }
    if (rc == ZKL_OK) {
      a->event_cb = cb;
      a->event_arg = arg;
    }
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl__remote_get_servers(const zkl_session *cs, char *buf, size_t len) {
  zkl_session *s = (zkl_session *)cs; /* for s->mu only */
  zkl_agent *a = agent_of(s);
  int rc = ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (a->servers && *a->servers && strlen(a->servers) < len) {
    strcpy(buf, a->servers);
    rc = ZKL_OK;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl__remote_revision(const zkl_session *s) {
  return agent_of(s)->revision; /* set before the session is returned */
}

void zkl__remote_count_locks(const zkl_session *cs, unsigned *held,
                             unsigned *waiting) {
  zkl_session *s = (zkl_session *)cs;
  zkl_agent *a = agent_of(s);
  zkl_link *p;
  *held = *waiting = 0;
  pthread_mutex_lock(&s->mu);
  for (p = a->locks.next; p != &a->locks; p = p->next) {
    zkl_remote *r = zkl__container_of(p, zkl_remote, link);
    if (r->freed)
      continue;
    if (r->holds > 0)
      (*held)++;
    else if (r->acquiring)
      (*waiting)++;
  }
  pthread_mutex_unlock(&s->mu);
}

/* Takes the first note of q off it. */
static zkl_note *pop_locked(zkl_runner *q) {
  zkl_note *n = q->notes;
  if (!(q->notes = n->next))
    q->tail = &q->notes;
  return n;
}

/* Runs one note with s->mu released, and frees it. A lost or revoke
 * notice of a lock freed meanwhile is dropped: nothing after
 * zkl_lock_free(). */
static void run_note_locked(zkl_agent *a, zkl_note *n) {
  zkl_session *s = a->s;
  bool gone = false;
  if ((n->kind == N_LOST || n->kind == N_REVOKE) && n->l->remote->freed) {
    lock_unref_locked(n->l, &gone);
    free(n);
    return;
  }
  if (n->kind == N_LEADER) {
    zkl_rwatch *w = n->w;
    if (!w->freed) {
      pthread_mutex_unlock(&s->mu);
      w->cb((zkl_leader_watch *)w, n->rc, n->id, n->token, w->arg);
      pthread_mutex_lock(&s->mu);
    }
    rwatch_unref_locked(w);
    free(n->id);
    free(n);
    return;
  }
  /* A grant whose callback waited while its hold was lost (its lost
   * notice does not wait for it): the caller must not take the lock as
   * held, and hears ZKL_ELOST, as direct (lock_object.c). */
  if (n->kind == N_ACQUIRE && n->rc == ZKL_OK && n->token != 0 &&
      n->l->remote->holds == 0 && n->l->remote->lost_token == n->token) {
    n->rc = ZKL_ELOST;
    n->token = 0;
  }
  pthread_mutex_unlock(&s->mu);
  switch (n->kind) {
  case N_ACQUIRE:
    n->acquire_cb(n->l, n->rc, n->token, n->arg);
    break;
  case N_RELEASE:
    if (n->release_cb)
      n->release_cb(n->l, n->rc, n->arg);
    break;
  case N_LOST:
    n->lost_cb(n->l, (zkl_lost_reason)n->rc, n->arg);
    break;
  case N_REVOKE:
    n->revoke_cb(n->l, n->arg);
    break;
  case N_STATE:
    n->state_cb(s, (zkl_state)n->rc, n->arg);
    break;
  case N_EVENT:
    n->event_cb(s, &n->ev, n->arg);
    break;
  case N_COMMIT:
    n->commit_cb(n->l, n->rc, n->arg);
    break;
  }
  pthread_mutex_lock(&s->mu);
  if (n->l)
    lock_unref_locked(n->l, &gone);
  free(n->id);
  free(n);
}

/* Whether a lost notice queued before seq is still to run, or running: a
 * later callback waits for it (a loss is told before a later grant). */
static bool loss_before_locked(const zkl_agent *a, uint64_t seq) {
  return (a->losses.running && a->losses.running < seq) ||
         (a->losses.notes && a->losses.notes->seq < seq);
}

/* What is left when the threads are gone (nothing, unless a note came
 * after one of them ended), in the order it was queued. */
static void drain_locked(zkl_agent *a) {
  while (a->calls.notes || a->losses.notes) {
    zkl_runner *q = &a->calls;
    if (!a->calls.notes ||
        (a->losses.notes && a->losses.notes->seq < a->calls.notes->seq))
      q = &a->losses;
    run_note_locked(a, pop_locked(q));
  }
}

static void *runner_main(void *arg) {
  zkl_runner *q = arg;
  zkl_agent *a = q->a;
  zkl_session *s = a->s;
  bool last;
  zkl__mark_zk_thread();
  pthread_mutex_lock(&s->mu);
  for (;;) {
    zkl_note *n = q->notes;
    if (n && (q->lost || !loss_before_locked(a, n->seq))) {
      q->running = pop_locked(q)->seq;
      run_note_locked(a, n);
      q->running = 0;
      if (q->lost) /* the callback thread may wait for this one */
        pthread_cond_signal(&a->calls.cond);
      continue;
    }
    /* The I/O thread queues the last notes, so its end is ours. */
    if (!n && a->io_done)
      break;
    pthread_cond_wait(&q->cond, &s->mu);
  }
  if (q->lost || !a->detached) {
    pthread_mutex_unlock(&s->mu);
    return NULL;
  }
  /* Closed from a callback (of this session or another's): this thread,
   * detached by the close, joins the other two and frees the session
   * should it hold the last reference. */
  pthread_mutex_unlock(&s->mu);
  pthread_join(a->io, NULL);
  pthread_join(a->losses.thread, NULL);
  pthread_mutex_lock(&s->mu);
  drain_locked(a);
  last = --a->refs == 0;
  a->detached = false;
  pthread_mutex_unlock(&s->mu);
  if (last)
    agent_free(a);
  return NULL;
}

/* ------------------------------------------------------------- pending */

static zkl_pending *find_pending(zkl_agent *a, uint32_t req) {
  zkl_link *p;
  for (p = a->pending.next; p != &a->pending; p = p->next) {
    zkl_pending *c = zkl__container_of(p, zkl_pending, link);
    if (c->req == req)
      return c;
  }
  return NULL;
}

/* Ends a call: its waiter wakes, or its callback is queued. */
static void complete_locked(zkl_agent *a, zkl_pending *c, int rc,
                            int64_t token) {
  bool gone;
  zkl__list_remove(&c->link);
  c->rc = rc;
  c->token = token;
  if (c->type == ZKL_MSG_ACQUIRE && c->l && rc != ZKL_OK &&
      c->l->remote->holds == 0) {
    free(c->l->remote->paths); /* a waiter's nodes (EVENT): gone with it */
    c->l->remote->paths = NULL;
  }
  if (c->type == ZKL_MSG_ACQUIRE && c->l && !c->again)
    acquire_event_locked(a, c->l, rc, token);
  if (c->waiter) {
    c->done = true;
    pthread_cond_broadcast(&a->cond);
    return; /* the waiter drops its reference */
  }
  if (c->acquire_cb || c->release_cb || c->commit_cb) {
    zkl_note *n = calloc(1, sizeof *n);
    if (n) {
      n->kind = c->acquire_cb ? N_ACQUIRE
                : c->release_cb ? N_RELEASE
                                : N_COMMIT;
      n->l = c->l;
      n->rc = rc;
      n->token = token;
      n->acquire_cb = c->acquire_cb;
      n->release_cb = c->release_cb;
      n->commit_cb = c->commit_cb;
      n->arg = c->arg;
      note_locked(a, n);
    }
  }
  if (c->l)
    lock_unref_locked(c->l, &gone);
  free(c);
}

static void lose_locked(zkl_agent *a, zkl_remote *r, zkl_lock *l,
                        int reason) {
  char node[ZKL_PATH_MAX];
  if (r->holds == 0)
    return;
  if (!r->freed)
    lock_event_locked(a, l, ZKL_EVENT_LOST, reason, 0,
                      own_node(r, node, sizeof node), NULL, 0);
  r->lost_token = r->token;
  set_holds(r, 0);
  r->lost = true;
  if (r->lost_cb && !r->freed) {
    zkl_note *n = calloc(1, sizeof *n);
    if (n) {
      n->kind = N_LOST;
      n->l = l;
      n->rc = reason;
      n->lost_cb = r->lost_cb;
      n->arg = r->lost_arg;
      note_locked(a, n);
    }
  }
}

/* Every held lock is lost for reason. */
static void lose_all_locked(zkl_agent *a, int reason) {
  zkl_link *p;
  for (p = a->locks.next; p != &a->locks; p = p->next) {
    zkl_remote *r = zkl__container_of(p, zkl_remote, link);
    lose_locked(a, r, r->l, reason);
  }
}

/* The agent is gone (why: ZKL_EAGENT, ZKL_EEXPIRED): every call ends, every
 * held lock is lost, the state callback hears EXPIRED. */
static void agent_gone_locked(zkl_agent *a, int why) {
  if (a->dead)
    return;
  a->dead = why;
  if (a->fd >= 0) {
    close(a->fd);
    a->fd = -1;
  }
  a->out_len = a->out_off = 0;
  while (!zkl__list_empty(&a->pending))
    complete_locked(a, zkl__container_of(a->pending.next, zkl_pending, link),
                    gone_rc(a), 0);
  lose_all_locked(a, why == ZKL_EEXPIRED ? ZKL_LOST_SESSION_EXPIRED
                                         : ZKL_LOST_AGENT);
  {
    zkl_link *p;
    for (p = a->watches.next; p != &a->watches; p = p->next)
      note_leader_locked(a, zkl__container_of(p, zkl_rwatch, link),
                         gone_rc(a), NULL, 0);
  }
  if (!a->closing)
    note_state_locked(a, ZKL_STATE_EXPIRED);
}

static zkl_remote *find_handle(zkl_agent *a, int32_t handle,
                               zkl_lock **out) {
  zkl_link *p;
  for (p = a->locks.next; p != &a->locks; p = p->next) {
    zkl_remote *r = zkl__container_of(p, zkl_remote, link);
    if (r->handle == handle) {
      *out = r->l;
      return r;
    }
  }
  return NULL;
}

/* The kind that refused an acquire, as the library's own static string. */
static const char *intern_kind(const char *k) {
  static const char *const kinds[] = {"mutex", "read lock", "write lock",
                                      "semaphore", "election"};
  size_t i;
  if (!*k)
    return NULL;
  for (i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (strcmp(k, kinds[i]) == 0)
      return kinds[i];
  return "another kind";
}

/* One frame from the agent. False: it broke the protocol. */
static bool on_frame_locked(zkl_agent *a, zkl_rframe *f) {
  zkl_lock *l;
  zkl_remote *r;
  switch (f->type) {
  case ZKL_MSG_REPLY: {
    zkl_pending *c = find_pending(a, f->request);
    int rc = zkl__wire_get_i32(f);
    /* None: its lock was freed here (the call ended with ZKL_ECLOSED)
     * while the agent's answer was on its way, before it read the FREE.
     * Nothing waits for it. */
    if (!c)
      return true;
    if (c->type == ZKL_MSG_ACQUIRE) {
      int64_t token = zkl__wire_get_i64(f), deadline = zkl__wire_get_i64(f);
      const char *paths = zkl__wire_get_str(f), *other = zkl__wire_get_str(f);
      const char *refused = zkl__wire_get_str(f);
      if (!zkl__wire_done(f))
        return false;
      r = c->l->remote;
      r->acquiring = false;
      r->other_kind = intern_kind(other);
      free(r->refused);
      r->refused = *refused ? strdup(refused) : NULL;
      if (rc == ZKL_OK) {
        set_holds(r, r->holds + 1);
        r->token = token;
        r->lost = false;
        r->break_mark = false;
        free(r->paths);
        r->paths = strdup(paths);
        /* 0: the agent's lease lapsed between its grant and its answer
         * (its LOST follows): the hold is over by this clock at once. */
        a->deadline = deadline > 0 ? deadline : 1;
      }
      complete_locked(a, c, rc, token);
    } else if (c->parse) {
      if (!c->parse(f, rc, c->out))
        return false;
      complete_locked(a, c, rc, 0);
    } else {
      if (!zkl__wire_done(f))
        return false;
      if (c->type == ZKL_MSG_RELEASE) {
        r = c->l->remote;
        r->releasing = false;
        if (rc == ZKL_OK && r->holds == 1) {
          char node[ZKL_PATH_MAX];
          lock_event_locked(a, c->l, ZKL_EVENT_RELEASED, 0, 0,
                            own_node(r, node, sizeof node), NULL, 0);
        }
        if (rc == ZKL_OK)
          set_holds(r, r->holds - 1 > 0 ? r->holds - 1 : 0);
        else if (rc == ZKL_ELOST || rc == ZKL_ENOTHELD)
          set_holds(r, 0);
      }
      complete_locked(a, c, rc, 0);
    }
    return true;
  }
  case ZKL_MSG_LOST: {
    int32_t handle = zkl__wire_get_i32(f), reason = zkl__wire_get_i32(f);
    if (!zkl__wire_done(f))
      return false;
    if ((r = find_handle(a, handle, &l)))
      lose_locked(a, r, l, reason);
    return true;
  }
  case ZKL_MSG_REVOKED: {
    int32_t handle = zkl__wire_get_i32(f), breaking = 0;
    if (a->revision >= 3) /* a break's, or a plain request */
      breaking = zkl__wire_get_i32(f);
    if (!zkl__wire_done(f))
      return false;
    if ((r = find_handle(a, handle, &l)) && breaking)
      r->break_mark = true; /* before the callback that may ask */
    if (r && r->revoke_cb && !r->freed) {
      zkl_note *n = calloc(1, sizeof *n);
      if (n) {
        n->kind = N_REVOKE;
        n->l = l;
        n->revoke_cb = r->revoke_cb;
        n->arg = r->revoke_arg;
        note_locked(a, n);
      }
    }
    return true;
  }
  case ZKL_MSG_LEASE: {
    int64_t deadline = zkl__wire_get_i64(f);
    if (!zkl__wire_done(f))
      return false;
    /* A 0 while holding (the agent's lease lapsed; its LOST is on the
     * way) must not switch this clock off: the last deadline stands. */
    if (deadline > 0 || !a->holding)
      a->deadline = deadline;
    return true;
  }
  case ZKL_MSG_STATE: {
    int32_t state = zkl__wire_get_i32(f);
    if (!zkl__wire_done(f))
      return false;
    if (state == ZKL_STATE_SUSPENDED || state == ZKL_STATE_RECONNECTED)
      note_state_locked(a, (zkl_state)state);
    return true;
  }
  case ZKL_MSG_LEADER_NEWS: {
    int32_t handle = zkl__wire_get_i32(f), rc = zkl__wire_get_i32(f);
    const char *id = zkl__wire_get_str(f);
    int64_t token = zkl__wire_get_i64(f);
    zkl_link *p;
    if (!zkl__wire_done(f))
      return false;
    for (p = a->watches.next; p != &a->watches; p = p->next) {
      zkl_rwatch *w = zkl__container_of(p, zkl_rwatch, link);
      if (w->handle == handle) {
        note_leader_locked(a, w, rc, id, token);
        break;
      }
    }
    return true;
  }
  case ZKL_MSG_EVENT: {
    int32_t type = zkl__wire_get_i32(f), handle = zkl__wire_get_i32(f);
    const char *node = zkl__wire_get_str(f);
    const char *waiting_for = zkl__wire_get_str(f);
    int32_t position = zkl__wire_get_i32(f);
    const char *paths = zkl__wire_get_str(f);
    if (!zkl__wire_done(f))
      return false;
    /* Queueing news of an attempt still under way (not one ended since):
     * its nodes, which zkl_lock_get_node_paths() then gives while it
     * waits, as direct, and the event. */
    if (type == ZKL_EVENT_QUEUED && (r = find_handle(a, handle, &l)) &&
        r->acquiring && !r->freed) {
      if (*paths && r->holds == 0) {
        free(r->paths);
        r->paths = strdup(paths);
      }
      lock_event_locked(a, l, type, 0, 0, *node ? node : NULL,
                        *waiting_for ? waiting_for : NULL, position);
    }
    return true;
  }
  case ZKL_MSG_SERVERS: {
    const char *servers = zkl__wire_get_str(f);
    char *mine;
    if (!zkl__wire_done(f))
      return false;
    if (a->servers && strcmp(a->servers, servers) == 0)
      return true;
    if ((mine = strdup(servers))) {
      zkl_event ev = {0};
      free(a->servers);
      a->servers = mine;
      ev.type = ZKL_EVENT_SERVERS;
      ev.servers = mine;
      emit_locked(a, &ev);
    }
    return true;
  }
  case ZKL_MSG_PONG:
    return zkl__wire_done(f);
  case ZKL_MSG_BYE: {
    int32_t why = zkl__wire_get_i32(f);
    if (!zkl__wire_done(f))
      return false;
    agent_gone_locked(a, why == ZKL_EEXPIRED ? ZKL_EEXPIRED : ZKL_EAGENT);
    return true;
  }
  default:
    return false;
  }
}

/* Reads what the agent sent. False when the connection ended. */
static bool read_locked(zkl_agent *a) {
  for (;;) {
    ssize_t n;
    size_t at = 0;
    if (a->in_cap - a->in_len < 65536) {
      unsigned char *d = realloc(a->in, a->in_len + 65536);
      if (!d)
        return false;
      a->in = d;
      a->in_cap = a->in_len + 65536;
    }
    n = recv(a->fd, a->in + a->in_len, a->in_cap - a->in_len, MSG_DONTWAIT);
    if (n == 0)
      return false;
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    a->in_len += (size_t)n;
    a->unanswered = 0; /* the agent's loop ran after our last PING */
    while (a->fd >= 0) {
      zkl_rframe f;
      bool ok;
      long size = zkl__wire_frame_size(a->in + at, a->in_len - at);
      if (size < 0)
        return false;
      if (size == 0 || (size_t)size > a->in_len - at)
        break;
      if (!zkl__wire_open(&f, a->in + at, (size_t)size))
        return false;
      ok = f.version == ZKL_WIRE_VERSION && on_frame_locked(a, &f);
      zkl__wire_close(&f);
      if (!ok) {
        zkl__log("agent: a frame of type %d did not parse: leaving", f.type);
        return false;
      }
      at += (size_t)size;
    }
    if (a->fd < 0)
      return true; /* a BYE */
    memmove(a->in, a->in + at, a->in_len - at);
    a->in_len -= at;
  }
}

/* The I/O thread: the socket, the pings, the lease clock. It queues the
 * user's callbacks and never runs one, nor waits for one. */
/* Whether a test holds this thread's reads (zkl__test_agent_hold_reads()):
 * looked at after the poll too, since a poll begun before the hold may
 * return with the socket readable. */
static bool reads_held(const zkl_agent *a) {
#ifdef ZKL_TEST_HOOKS
  return a->test_hold_reads;
#else
  (void)a;
  return false;
#endif
}

static void *io_main(void *arg) {
  zkl_agent *a = arg;
  zkl_session *s = a->s;
  zkl__mark_zk_thread(); /* it makes no blocking call either */
  pthread_mutex_lock(&s->mu);
  while (!a->stop) {
    struct pollfd p[2];
    int timeout = -1;
    int64_t now = zkl__now_ms();
    p[0].fd = a->wake_rd;
    p[0].events = POLLIN;
    p[1].fd = a->fd;
    p[1].events = POLLIN | (a->out_len > a->out_off ? POLLOUT : 0);
#ifdef ZKL_TEST_HOOKS
    if (a->test_hold_reads)
      p[1].events &= (short)~POLLIN;
#endif
    if (a->holding && a->deadline > 0)
      timeout = a->deadline > now ? (int)(a->deadline - now) : 0;
    /* The agent frees the locks of a client it has not heard from in a
     * session timeout (docs/agent.md): a ping every third of it. */
    if (a->fd >= 0 && a->timeout_ms > 0) {
      if (now >= a->next_ping) {
        zkl_wbuf b = {0};
        zkl__wire_begin(&b, ZKL_MSG_PING, 0);
        send_locked(a, &b);
        a->next_ping = now + a->timeout_ms / 3;
        if (!a->unanswered && a->revision >= 2) /* 1 sends no PONG */
          a->unanswered = now;
      }
      if (timeout < 0 || a->next_ping - now < timeout)
        timeout = (int)(a->next_ping - now);
    }
    pthread_mutex_unlock(&s->mu);
    poll(p, 2, timeout);
    pthread_mutex_lock(&s->mu);
    if (p[0].revents) {
      char buf[64];
      while (read(a->wake_rd, buf, sizeof buf) > 0)
        ;
    }
    /* The lease by this process's own clock, first: a deadline that has
     * passed is over whatever is still unread (a process that was frozen
     * wakes past it, then reads the agent's news). */
    if (a->holding && a->deadline > 0 && zkl__now_ms() >= a->deadline)
      lose_all_locked(a, ZKL_LOST_LEASE_EXPIRED);
    if (a->fd >= 0 && p[1].fd == a->fd) {
      if (p[1].revents & POLLOUT)
        flush_locked(a);
      if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !reads_held(a) &&
          !read_locked(a))
        agent_gone_locked(a, ZKL_EAGENT);
    }
    /* The lease by this process's own clock: nothing newer came in time. */
    if (a->holding && a->deadline > 0 && zkl__now_ms() >= a->deadline)
      lose_all_locked(a, ZKL_LOST_LEASE_EXPIRED);
    /* An agent that answers no PING for a session timeout (frozen, or its
     * loop stuck) is taken for gone, so that no call waits on it for ever:
     * a waiter would otherwise hear nothing from a frozen agent. Counted
     * from a PING sent after this thread last ran, so a process that was
     * frozen itself gives the agent a whole timeout to answer. */
    if (a->fd >= 0 && a->unanswered && a->timeout_ms > 0 &&
        zkl__now_ms() - a->unanswered > a->timeout_ms) {
      zkl__log("agent: no answer for %d ms: taking it for gone",
               a->timeout_ms);
      agent_gone_locked(a, ZKL_EAGENT);
    }
  }
  a->io_done = true;
  pthread_cond_broadcast(&a->calls.cond);
  pthread_cond_broadcast(&a->losses.cond);
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* Ends the threads (those started) without a close: a failed open. */
static void stop_threads(zkl_agent *a) {
  zkl_session *s = a->s;
  pthread_mutex_lock(&s->mu);
  a->stop = true;
  if (!a->io_started)
    a->io_done = true;
  wake(a);
  pthread_cond_broadcast(&a->calls.cond);
  pthread_cond_broadcast(&a->losses.cond);
  pthread_mutex_unlock(&s->mu);
  if (a->io_started)
    pthread_join(a->io, NULL);
  if (a->calls.started)
    pthread_join(a->calls.thread, NULL);
  if (a->losses.started)
    pthread_join(a->losses.thread, NULL);
}

static int start_threads(zkl_agent *a) {
  a->calls.started =
      pthread_create(&a->calls.thread, NULL, runner_main, &a->calls) == 0;
  a->losses.started = a->calls.started &&
      pthread_create(&a->losses.thread, NULL, runner_main, &a->losses) == 0;
  a->io_started = a->losses.started &&
                  pthread_create(&a->io, NULL, io_main, a) == 0;
  if (a->io_started)
    return ZKL_OK;
  stop_threads(a);
  return ZKL_ESYSTEM;
}

/* ----------------------------------------------------------- the session */

/* Writes and reads the HELLO exchange before the thread starts. */
static int hello(zkl_agent *a, int timeout_ms) {
  zkl_wbuf b = {0};
  int64_t until = zkl__now_ms() + timeout_ms;
  zkl__wire_begin(&b, ZKL_MSG_HELLO, ++a->next_req);
  zkl__wire_i32(&b, ZKL_WIRE_REVISION);
  if (!zkl__wire_end(&b)) {
    zkl__wire_free(&b);
    return ZKL_ENOMEM;
  }
  if (send(a->fd, b.data, b.len, MSG_NOSIGNAL) != (ssize_t)b.len) {
    zkl__wire_free(&b);
    return ZKL_EAGENT;
  }
  zkl__wire_free(&b);
  for (;;) {
    struct pollfd p = {a->fd, POLLIN, 0};
    int64_t left = until - zkl__now_ms();
    long size;
    ssize_t n;
    if (left <= 0 || poll(&p, 1, (int)left) <= 0)
      return ZKL_EAGENT;
    if (a->in_cap - a->in_len < 4096) {
      unsigned char *d = realloc(a->in, a->in_len + 4096);
      if (!d)
        return ZKL_ENOMEM;
      a->in = d;
      a->in_cap = a->in_len + 4096;
    }
    if ((n = recv(a->fd, a->in + a->in_len, a->in_cap - a->in_len, 0)) <= 0)
      return ZKL_EAGENT;
    a->in_len += (size_t)n;
    size = zkl__wire_frame_size(a->in, a->in_len);
    if (size < 0)
      return ZKL_EAGENT;
    if (size > 0 && (size_t)size <= a->in_len) {
      zkl_rframe f;
      const char *servers;
      int rc;
      if (!zkl__wire_open(&f, a->in, (size_t)size))
        return ZKL_ENOMEM;
      if (f.type == ZKL_MSG_BYE) {
        rc = zkl__wire_get_i32(&f);
        zkl__wire_close(&f);
        return rc == ZKL_EEXPIRED ? ZKL_EEXPIRED : ZKL_EAGENT;
      }
      rc = zkl__wire_get_i32(&f);
      a->revision = zkl__wire_get_i32(&f); /* 1: none of 2's (wire.h) */
      a->timeout_ms = zkl__wire_get_i32(&f);
      (void)zkl__wire_get_i64(&f);
      (void)zkl__wire_get_i32(&f);
      servers = a->revision >= 2 ? zkl__wire_get_str(&f) : "";
      if (f.type != ZKL_MSG_REPLY || !zkl__wire_done(&f) || rc != ZKL_OK)
        rc = ZKL_EAGENT;
      else if (*servers && !(a->servers = strdup(servers)))
        rc = ZKL_ENOMEM;
      zkl__wire_close(&f);
      memmove(a->in, a->in + size, a->in_len - (size_t)size);
      a->in_len -= (size_t)size;
      return rc;
    }
  }
}

int zkl__remote_open(zkl_session **out, const char *path, int timeout_ms,
                     zkl_state_cb on_state, void *state_arg,
                     zkl_event_cb on_event, void *event_arg) {
  struct sockaddr_un addr;
  zkl_session *s;
  zkl_agent *a;
  int p[2], rc;
  if (strlen(path) >= sizeof addr.sun_path || !*path)
    return ZKL_EINVAL;
  if (!(s = calloc(1, sizeof *s)) || !(a = calloc(1, sizeof *a))) {
    free(s);
    return ZKL_ENOMEM;
  }
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
    free(a);
    free(s);
    return ZKL_ESYSTEM;
  }
  pthread_mutex_init(&s->mu, NULL);
  zkl__cond_init(&a->cond);
  zkl__cond_init(&a->calls.cond);
  zkl__cond_init(&a->losses.cond);
  s->agent = a;
  a->s = s;
  a->wake_rd = p[0];
  a->wake_wr = p[1];
  a->refs = 1;
  a->calls.a = a->losses.a = a;
  a->calls.tail = &a->calls.notes;
  a->losses.tail = &a->losses.notes;
  a->losses.lost = true;
  zkl__list_init(&a->pending);
  zkl__list_init(&a->locks);
  zkl__list_init(&a->watches);
  a->state_cb = on_state;
  a->state_arg = state_arg;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  strcpy(addr.sun_path, path);
  a->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (a->fd < 0 || connect(a->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    zkl__log("agent %s: %s", path, strerror(errno));
    rc = ZKL_EAGENT;
  } else {
    rc = hello(a, timeout_ms > 0 ? timeout_ms : 10000);
  }
  if (rc == ZKL_OK)
    rc = start_threads(a);
  if (rc != ZKL_OK) {
    agent_free(a);
    return rc;
  }
  pthread_mutex_lock(&s->mu);
  if (on_event) {
    zkl_wbuf b = {0};
    if (a->revision >= 2) { /* 1 tells no queueing */
      zkl__wire_begin(&b, ZKL_MSG_EVENTS, 0);
      zkl__wire_i32(&b, 1);
      send_locked(a, &b); /* a failure is the agent gone: the thread says so */
    }
    a->event_cb = on_event;
    a->event_arg = event_arg;
  }
  note_state_locked(a, ZKL_STATE_CONNECTED);
  pthread_mutex_unlock(&s->mu);
  *out = s;
  return ZKL_OK;
}

int zkl__remote_close(zkl_session *s, zkl_close_outcome *how) {
  zkl_agent *a = agent_of(s);
  zkl_link *p;
  bool on_thread = zkl__on_zk_thread(), last;
  pthread_mutex_lock(&s->mu);
  if (a->closing) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_EINVAL;
  }
  a->closing = true;
  /* The agent frees every lock of this connection when it ends. */
  if (a->fd >= 0) {
    shutdown(a->fd, SHUT_RDWR);
    close(a->fd);
    a->fd = -1;
  }
  while (!zkl__list_empty(&a->pending))
    complete_locked(a, zkl__container_of(a->pending.next, zkl_pending, link),
                    ZKL_ECLOSED, 0);
  for (p = a->locks.next; p != &a->locks; p = p->next) {
    zkl_remote *r = zkl__container_of(p, zkl_remote, link);
    char node[ZKL_PATH_MAX];
    if (r->holds > 0 && !r->freed) /* the agent lets it go with us */
      lock_event_locked(a, r->l, ZKL_EVENT_RELEASED, 0, 0,
                        own_node(r, node, sizeof node), NULL, 0);
    set_holds(r, 0);
  }
  for (p = a->watches.next; p != &a->watches; p = p->next)
    note_leader_locked(a, zkl__container_of(p, zkl_rwatch, link),
                       ZKL_ECLOSED, NULL, 0);
  a->stop = true;
  wake(a);
  pthread_cond_broadcast(&a->calls.cond);
  pthread_cond_broadcast(&a->losses.cond);
  if (how)
    *how = on_thread ? ZKL_CLOSE_BACKGROUND : ZKL_CLOSE_DONE;
  if (on_thread) {
    /* A callback's thread (this session's, or another's): nothing here
     * may wait for the threads, one of which may be this one. The
     * callback thread ends after the callbacks queued, this one's
     * included, and joins the others and frees (runner_main). */
    note_state_locked(a, ZKL_STATE_CLOSED);
    a->detached = true;
    pthread_detach(a->calls.thread);
    pthread_mutex_unlock(&s->mu);
    return ZKL_OK;
  }
  pthread_mutex_unlock(&s->mu);
  pthread_join(a->io, NULL);
  pthread_join(a->losses.thread, NULL);
  pthread_join(a->calls.thread, NULL);
  pthread_mutex_lock(&s->mu);
  drain_locked(a);
  last = --a->refs == 0;
  pthread_mutex_unlock(&s->mu);
  if (a->state_cb)
    a->state_cb(s, ZKL_STATE_CLOSED, a->state_arg);
  if (last)
    agent_free(a);
  return ZKL_OK;
}

int zkl__remote_timeout(const zkl_session *s) {
  return agent_of(s)->timeout_ms;
}

int64_t zkl__remote_lease_deadline(const zkl_session *cs) {
  zkl_session *s = (zkl_session *)cs;
  zkl_agent *a = agent_of(s);
  int64_t d;
  pthread_mutex_lock(&s->mu);
  d = a->holding && !a->dead && !a->closing ? a->deadline : 0;
  pthread_mutex_unlock(&s->mu);
  return d;
}

int zkl__remote_on_state(zkl_session *s, zkl_state_cb cb, void *arg) {
  zkl_agent *a = agent_of(s);
  pthread_mutex_lock(&s->mu);
  a->state_cb = cb;
  a->state_arg = arg;
  pthread_mutex_unlock(&s->mu);
  return ZKL_OK;
}

/* -------------------------------------------------------------- locks */

/* A lock object with its remote part. */
static zkl_lock *lock_alloc(zkl_agent *a, const char *name, int kind) {
  zkl_lock *l = calloc(1, sizeof *l);
  zkl_remote *r = calloc(1, sizeof *r);
  if (!l || !r || !(l->name = strdup(name))) {
    free(l);
    free(r);
    return NULL;
  }
  r->l = l;
  l->s = a->s;
  l->remote = r;
  l->refs = 1;
  r->a = a;
  r->kind = kind;
  r->refs = 1;
  r->handle = ++a->next_handle;
  if (kind == ZKL_AGENT_RWLOCK)
    ++a->next_handle; /* h + 1: the write side */
  zkl__list_push(&a->locks, &r->link);
  a->refs++;
  return l;
}

static int new_locked(zkl_agent *a, zkl_lock *l, int kind,
                      const char *const *names, int count, int limit,
                      const char *id) {
  zkl_wbuf b = {0};
  int i;
  zkl__wire_begin(&b, ZKL_MSG_NEW, ++a->next_req);
  zkl__wire_i32(&b, l->remote->handle);
  zkl__wire_i32(&b, kind);
  zkl__wire_i32(&b, limit);
  zkl__wire_str(&b, id);
  zkl__wire_i32(&b, count);
  for (i = 0; i < count; i++)
    zkl__wire_str(&b, names[i]);
  return send_locked(a, &b);
}

int zkl__remote_new(zkl_lock **out, zkl_session *s, int kind,
                    const char *const *names, int count, int limit,
                    const char *id) {
  zkl_agent *a = agent_of(s);
  zkl_lock *l;
  int rc, i, j;
  for (i = 0; i < count; i++) {
    if (zkl__validate_name(names[i]) != ZKL_OK)
      return ZKL_EINVAL;
    for (j = 0; j < i; j++)
      if (strcmp(names[i], names[j]) == 0)
        return ZKL_EINVAL;
  }
  pthread_mutex_lock(&s->mu);
  if ((rc = gone_rc(a)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  if (!(l = lock_alloc(a, names[0], kind))) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_ENOMEM;
  }
  rc = new_locked(a, l, kind, names, count, limit, id);
  if (rc != ZKL_OK) {
    bool gone;
    l->remote->freed = true;
    lock_unref_locked(l, &gone);
    if (!gone)
      pthread_mutex_unlock(&s->mu);
    return rc;
  }
  pthread_mutex_unlock(&s->mu);
  *out = l;
  return ZKL_OK;
}

int zkl__remote_new_rwlock(zkl_lock **read, zkl_lock **write, zkl_session *s,
                           const char *name) {
  zkl_agent *a = agent_of(s);
  zkl_lock *r, *w;
  int rc;
  bool gone;
  if (zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if ((rc = gone_rc(a)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  if (!(r = lock_alloc(a, name, ZKL_AGENT_RWLOCK))) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_ENOMEM;
  }
  if (!(w = lock_alloc(a, name, ZKL_AGENT_RWLOCK))) {
    r->remote->freed = true;
    lock_unref_locked(r, &gone);
    pthread_mutex_unlock(&s->mu);
    return ZKL_ENOMEM;
  }
  /* The write side is h + 1 of the read side's handle h. */
  a->next_handle -= 2;
  w->remote->handle = r->remote->handle + 1;
  rc = new_locked(a, r, ZKL_AGENT_RWLOCK, &name, 1, 0, NULL);
  if (rc != ZKL_OK) {
    r->remote->freed = w->remote->freed = true;
    lock_unref_locked(w, &gone);
    lock_unref_locked(r, &gone);
    if (!gone)
      pthread_mutex_unlock(&s->mu);
    return rc;
  }
  r->owned = w->owned = true;
  pthread_mutex_unlock(&s->mu);
  *read = r;
  *write = w;
  return ZKL_OK;
}

/* Marks l freed: its calls in flight end with ZKL_ECLOSED (the agent
 * answers none of them once it frees the handle), its holds go without a
 * lost callback. */
static void free_one_locked(zkl_agent *a, zkl_lock *l) {
  zkl_remote *r = l->remote;
  zkl_link *p, *next;
  r->freed = true;
  for (p = a->pending.next; p != &a->pending; p = next) {
    zkl_pending *c = zkl__container_of(p, zkl_pending, link);
    next = p->next;
    if (c->l == l)
      complete_locked(a, c, ZKL_ECLOSED, 0);
  }
  set_holds(r, 0);
}

static void send_free_locked(zkl_agent *a, int32_t handle) {
  zkl_wbuf b = {0};
  if (gone_rc(a) != ZKL_OK)
    return;
  zkl__wire_begin(&b, ZKL_MSG_FREE, ++a->next_req);
  zkl__wire_i32(&b, handle);
  send_locked(a, &b);
}

void zkl__remote_free(zkl_lock *l) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  bool gone;
  pthread_mutex_lock(&s->mu);
  if (l->remote->freed) {
    pthread_mutex_unlock(&s->mu);
    return;
  }
  free_one_locked(a, l);
  send_free_locked(a, l->remote->handle);
  lock_unref_locked(l, &gone);
  if (!gone)
    pthread_mutex_unlock(&s->mu);
}

void zkl__remote_free_rwlock(zkl_lock *read, zkl_lock *write) {
  zkl_session *s = read->s;
  zkl_agent *a = agent_of(s);
  bool gone;
  pthread_mutex_lock(&s->mu);
  free_one_locked(a, read);
  free_one_locked(a, write);
  send_free_locked(a, read->remote->handle);
  lock_unref_locked(write, &gone);
  lock_unref_locked(read, &gone);
  if (!gone)
    pthread_mutex_unlock(&s->mu);
}

/* Starts a call on l: its pending record (c, filled by the caller but for
 * what this sets) and its frame. */
static int call_locked(zkl_agent *a, zkl_lock *l, zkl_pending *c, int type,
                       int timeout_ms) {
  zkl_wbuf b = {0};
  int rc;
  c->req = ++a->next_req;
  if (c->req == 0)
    c->req = ++a->next_req;
  c->type = type;
  c->l = l;
  c->again = type == ZKL_MSG_ACQUIRE && l->remote->holds > 0;
  if (type == ZKL_MSG_ACQUIRE && !c->again)
    l->remote->started_ms = zkl__now_ms();
  if (type == ZKL_MSG_ACQUIRE)
    l->remote->ever_acquired = true;
  zkl__wire_begin(&b, type, c->req);
  zkl__wire_i32(&b, l->remote->handle);
  if (type == ZKL_MSG_ACQUIRE)
    zkl__wire_i32(&b, timeout_ms);
  if ((rc = send_locked(a, &b)) != ZKL_OK)
    return rc;
  lock_ref_locked(l);
  zkl__list_push(&a->pending, &c->link);
  return ZKL_OK;
}

static int usable_locked(zkl_agent *a, zkl_lock *l) {
  if (l->remote->freed)
    return ZKL_ECLOSED;
  return gone_rc(a);
}

/* A release nobody waits for: after a loss the agent may still hold what
 * this process no longer counts on. */
static void release_quietly_locked(zkl_agent *a, zkl_lock *l) {
  zkl_pending *c = calloc(1, sizeof *c);
  if (c && call_locked(a, l, c, ZKL_MSG_RELEASE, 0) != ZKL_OK)
    free(c);
}

/* The blocking face: a call, and a wait for its reply. */
static int wait_call(zkl_lock *l, int type, int timeout_ms, int64_t *token) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_remote *r = l->remote;
  zkl_pending c;
  int rc;
  bool gone;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  memset(&c, 0, sizeof c);
  c.waiter = true;
  pthread_mutex_lock(&s->mu);
  if (type == ZKL_MSG_RELEASE && r->lost && r->holds == 0 && !r->freed) {
    /* Lost since: say so once, and let the agent end what it has. */
    r->lost = false;
    if (usable_locked(a, l) == ZKL_OK)
      release_quietly_locked(a, l);
    pthread_mutex_unlock(&s->mu);
    return ZKL_ELOST;
  }
  if ((rc = usable_locked(a, l)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  if (type == ZKL_MSG_ACQUIRE && r->acquiring) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_EINPROGRESS;
  }
  if (type == ZKL_MSG_RELEASE && r->holds == 0) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_ENOTHELD;
  }
  if (type == ZKL_MSG_ACQUIRE)
    r->acquiring = true;
  else
    r->releasing = true;
  if ((rc = call_locked(a, l, &c, type, timeout_ms)) != ZKL_OK) {
    r->acquiring = r->releasing = false;
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  while (!c.done)
    pthread_cond_wait(&a->cond, &s->mu);
  rc = c.rc;
  /* Granted, but the lease may have run out before this thread woke: the
   * caller must not take the lock as held then (as blocking.c). */
  if (type == ZKL_MSG_ACQUIRE && rc == ZKL_OK && a->deadline > 0 &&
      zkl__now_ms() >= a->deadline) {
    lose_all_locked(a, ZKL_LOST_LEASE_EXPIRED);
    rc = ZKL_ELOST;
  }
  lock_unref_locked(l, &gone);
  if (!gone)
    pthread_mutex_unlock(&s->mu);
  if (rc == ZKL_OK && token)
    *token = c.token;
  return rc;
}

int zkl__remote_acquire(zkl_lock *l, int timeout_ms, int64_t *token) {
  return wait_call(l, ZKL_MSG_ACQUIRE, timeout_ms, token);
}

int zkl__remote_release(zkl_lock *l) {
  return wait_call(l, ZKL_MSG_RELEASE, 0, NULL);
}

int zkl__remote_acquire_async(zkl_lock *l, int timeout_ms, zkl_acquire_cb cb,
                              void *arg) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_pending *c = calloc(1, sizeof *c);
  int rc;
  if (!c)
    return ZKL_ENOMEM;
  c->acquire_cb = cb;
  c->arg = arg;
  pthread_mutex_lock(&s->mu);
  if ((rc = usable_locked(a, l)) == ZKL_OK && l->remote->acquiring)
    rc = ZKL_EINPROGRESS;
  if (rc == ZKL_OK && (rc = call_locked(a, l, c, ZKL_MSG_ACQUIRE,
                                        timeout_ms)) == ZKL_OK)
    l->remote->acquiring = true;
  pthread_mutex_unlock(&s->mu);
  if (rc != ZKL_OK)
    free(c);
  return rc;
}

int zkl__remote_release_async(zkl_lock *l, zkl_release_cb cb, void *arg) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_remote *r = l->remote;
  zkl_pending *c = calloc(1, sizeof *c);
  int rc;
  if (!c)
    return ZKL_ENOMEM;
  c->release_cb = cb;
  c->arg = arg;
  pthread_mutex_lock(&s->mu);
  if ((rc = usable_locked(a, l)) == ZKL_OK && r->holds == 0 && !r->lost)
    rc = ZKL_ENOTHELD;
  if (rc == ZKL_OK && r->releasing)
    rc = ZKL_EINPROGRESS;
  if (rc == ZKL_OK) {
    if (r->lost && r->holds == 0) {
      /* The agent ends what it has; the callback says ZKL_ELOST. */
      zkl_note *n = calloc(1, sizeof *n);
      r->lost = false;
      release_quietly_locked(a, l);
      if (n) {
        n->kind = N_RELEASE;
        n->l = l;
        n->rc = ZKL_ELOST;
        n->release_cb = cb;
        n->arg = arg;
        note_locked(a, n);
      }
    } else if ((rc = call_locked(a, l, c, ZKL_MSG_RELEASE, 0)) == ZKL_OK) {
      r->releasing = true;
      c = NULL;
    }
  }
  pthread_mutex_unlock(&s->mu);
  free(c);
  return rc;
}

int zkl__remote_cancel(zkl_lock *l) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_pending c, *cp;
  int rc;
  bool gone, wait = !zkl__on_zk_thread();
  memset(&c, 0, sizeof c);
  pthread_mutex_lock(&s->mu);
  if ((rc = usable_locked(a, l)) != ZKL_OK || !l->remote->acquiring) {
    pthread_mutex_unlock(&s->mu);
    return rc != ZKL_OK ? rc : ZKL_EIDLE;
  }
  /* A callback's thread waits for nothing (as a completion thread direct,
   * so that a callback never holds the others up on the agent): the
   * cancel goes, and the acquire's own reply says how it ended. */
  cp = wait ? &c : calloc(1, sizeof *cp);
  if (!cp) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_ENOMEM;
  }
  cp->waiter = wait;
  if ((rc = call_locked(a, l, cp, ZKL_MSG_CANCEL, 0)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    if (!wait)
      free(cp);
    return rc;
  }
  if (!wait) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_OK;
  }
  while (!c.done)
    pthread_cond_wait(&a->cond, &s->mu);
  rc = c.rc;
  lock_unref_locked(l, &gone);
  if (!gone)
    pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl__remote_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg) {
  zkl_session *s = l->s;
  pthread_mutex_lock(&s->mu);
  l->remote->lost_cb = cb;
  l->remote->lost_arg = arg;
  pthread_mutex_unlock(&s->mu);
  return ZKL_OK;
}

int zkl__remote_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg) {
  zkl_session *s = l->s;
  pthread_mutex_lock(&s->mu);
  l->remote->revoke_cb = cb;
  l->remote->revoke_arg = arg;
  pthread_mutex_unlock(&s->mu);
  return ZKL_OK;
}

int64_t zkl__remote_token(const zkl_lock *cl) {
  zkl_lock *l = (zkl_lock *)cl;
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  int64_t t = 0;
  pthread_mutex_lock(&s->mu);
  if (l->remote->holds > 0 && !a->dead && !a->closing &&
      (a->deadline == 0 || zkl__now_ms() < a->deadline))
    t = l->remote->token;
  pthread_mutex_unlock(&s->mu);
  return t;
}

const char *zkl__remote_other_kind(const zkl_lock *cl) {
  zkl_lock *l = (zkl_lock *)cl;
  const char *k;
  pthread_mutex_lock(&l->s->mu);
  k = l->remote->other_kind;
  pthread_mutex_unlock(&l->s->mu);
  return k;
}

bool zkl__remote_break_mark(const zkl_lock *cl) {
  zkl_lock *l = (zkl_lock *)cl;
  bool marked;
  pthread_mutex_lock(&l->s->mu);
  marked = l->remote->break_mark && l->remote->holds > 0;
  pthread_mutex_unlock(&l->s->mu);
  return marked;
}

const char *zkl__remote_refused_name(const zkl_lock *cl) {
  zkl_lock *l = (zkl_lock *)cl;
  const char *k;
  pthread_mutex_lock(&l->s->mu);
  k = l->remote->refused;
  pthread_mutex_unlock(&l->s->mu);
  return k;
}

int zkl__remote_set(zkl_lock *l, int option, int value, const char *text) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_wbuf b = {0};
  int rc;
  pthread_mutex_lock(&s->mu);
  if ((rc = usable_locked(a, l)) == ZKL_OK) {
    zkl__wire_begin(&b, ZKL_MSG_SET, ++a->next_req);
    zkl__wire_i32(&b, l->remote->handle);
    zkl__wire_i32(&b, option);
    zkl__wire_i32(&b, value);
    zkl__wire_str(&b, text);
    rc = send_locked(a, &b);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* A SET is not answered, so what the agent would refuse is refused here
 * first, as the library refuses it (mutex.c): another kind, or a lock that
 * was acquired already. An agent older than revision 4 knows no layout and
 * would cut the connection off: refused too, rather than queue in
 * Curator's layout beside kazoo contenders that do not see it. */
int zkl__remote_set_layout(zkl_lock *l, int layout) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  int rc;
  pthread_mutex_lock(&s->mu);
  rc = usable_locked(a, l);
  if (rc == ZKL_OK && l->remote->kind != ZKL_AGENT_MUTEX)
    rc = ZKL_EINVAL;
  else if (rc == ZKL_OK && (l->remote->ever_acquired || l->remote->holds > 0))
    rc = ZKL_EBUSY;
  else if (rc == ZKL_OK && a->revision < 4) {
    zkl__log("zkl_lock_set_layout: the agent speaks protocol revision %d, "
             "older than layouts: upgrade zklockd(8)",
             a->revision);
    rc = ZKL_EINVAL;
  }
  pthread_mutex_unlock(&s->mu);
  if (rc != ZKL_OK)
    return rc;
  return zkl__remote_set(l, ZKL_AGENT_SET_LAYOUT, layout, NULL);
}

int zkl__remote_node_paths(const zkl_lock *cl, bool all, char *buf,
                           size_t len) {
  zkl_lock *l = (zkl_lock *)cl;
  const char *paths;
  size_t n;
  int rc = ZKL_OK;
  pthread_mutex_lock(&l->s->mu);
  /* A waiter's too, once the agent told them (EVENT: events on). */
  paths = l->remote->holds > 0 || l->remote->acquiring ? l->remote->paths
                                                        : NULL;
  if (!paths || !*paths) {
    rc = ZKL_ENOTHELD;
  } else {
    n = all ? strlen(paths) : strcspn(paths, " ");
    if (n + 1 > len) {
      rc = ZKL_EINVAL;
    } else {
      memcpy(buf, paths, n);
      buf[n] = 0;
    }
  }
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

bool zkl__remote_is_multi(const zkl_lock *l) {
  return l->remote->kind == ZKL_AGENT_MULTI;
}

int zkl__agent_ask(zkl_session *s, int type, zkl_agent_put put,
                   const void *args, zkl_agent_parse parse, void *out) {
  zkl_agent *a = agent_of(s);
  zkl_pending c;
  zkl_wbuf b = {0};
  int rc;
  bool last;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK; /* a callback's thread: no blocking call there */
  memset(&c, 0, sizeof c);
  c.waiter = true;
  c.parse = parse;
  c.out = out;
  pthread_mutex_lock(&s->mu);
  if ((rc = gone_rc(a)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  c.req = ++a->next_req;
  if (c.req == 0)
    c.req = ++a->next_req;
  c.type = type;
  zkl__wire_begin(&b, type, c.req);
  put(&b, args);
  if ((rc = send_locked(a, &b)) != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    return rc;
  }
  zkl__list_push(&a->pending, &c.link);
  a->refs++; /* a close meanwhile ends the call; we free, should we be last */
  while (!c.done)
    pthread_cond_wait(&a->cond, &s->mu);
  agent_unref_locked(a, &last);
  pthread_mutex_unlock(&s->mu);
  if (last)
    agent_free(a);
  return c.rc;
}

/* ------------------------------------------------------ guarded writes */

int zkl__remote_commit(zkl_lock *l, int count, const zoo_op_t *ops,
                       zoo_op_result_t *results, zkl_commit_cb cb,
                       void *arg) {
  zkl_session *s = l->s;
  zkl_agent *a = agent_of(s);
  zkl_remote *r = l->remote;
  zkl_pending waited, *c = &waited;
  zkl_wbuf b = {0};
  int rc;
  bool gone;
  if (!ops || !results || count <= 0 || count > ZKL_COMMIT_OPS_MAX)
    return ZKL_EINVAL;
  if (!cb && zkl__on_zk_thread())
    return ZKL_EDEADLK; /* a callback's thread: no blocking call there */
  if (cb && !(c = calloc(1, sizeof *c)))
    return ZKL_ENOMEM;
  if (!cb) {
    memset(&waited, 0, sizeof waited);
    waited.waiter = true;
  }
  pthread_mutex_lock(&s->mu);
  rc = usable_locked(a, l);
  if (rc == ZKL_OK && a->revision < 2) {
    zkl__log("zkl_lock_commit: the agent speaks protocol revision %d, "
             "older than guarded writes: upgrade zklockd(8)",
             a->revision);
    rc = ZKL_EINVAL;
  }
  /* A hold past its lease commits nothing, by this clock as by the
   * agent's (the agent checks its own too). */
  if (rc == ZKL_OK && a->holding && a->deadline > 0 &&
      zkl__now_ms() >= a->deadline)
    lose_all_locked(a, ZKL_LOST_LEASE_EXPIRED);
  if (rc == ZKL_OK && r->holds == 0)
    rc = r->lost ? ZKL_ELOST : ZKL_ENOTHELD;
  if (rc == ZKL_OK)
    rc = zkl__commit_check(count, ops);
  if (rc == ZKL_OK) {
    c->commit_cb = cb;
    c->arg = arg;
    c->parse = zkl__commit_parse;
    c->commit.count = count;
    c->commit.ops = ops;
    c->commit.results = results;
    c->out = &c->commit;
    c->req = ++a->next_req;
    if (c->req == 0)
      c->req = ++a->next_req;
    c->type = ZKL_MSG_COMMIT;
    c->l = l;
    zkl__wire_begin(&b, ZKL_MSG_COMMIT, c->req);
    zkl__commit_put(&b, r->handle, count, ops);
    rc = send_locked(a, &b); /* over ZKL_WIRE_MAX: ZKL_EINVAL */
  }
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    if (cb)
      free(c);
    return rc;
  }
  lock_ref_locked(l);
  zkl__list_push(&a->pending, &c->link);
  if (cb) {
    pthread_mutex_unlock(&s->mu);
    return ZKL_OK;
  }
  while (!waited.done)
    pthread_cond_wait(&a->cond, &s->mu);
  rc = waited.rc;
  lock_unref_locked(l, &gone);
  if (!gone)
    pthread_mutex_unlock(&s->mu);
  return rc;
}

/* ------------------------------------------------------ leader watches */

/* Every remote watch of the process: how zkl_leader_watch_free() tells
 * one from the library's own. */
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static zkl_rwatch *reg;

int zkl__remote_leader_watch_new(zkl_leader_watch **out, zkl_session *s,
                                 const char *name, zkl_leader_cb cb,
                                 void *arg) {
  zkl_agent *a = agent_of(s);
  zkl_rwatch *w;
  zkl_wbuf b = {0};
  int rc;
  if (!out || !cb || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if (!(w = calloc(1, sizeof *w)))
    return ZKL_ENOMEM;
  w->a = a;
  w->cb = cb;
  w->arg = arg;
  w->refs = 1;
  pthread_mutex_lock(&s->mu);
  if ((rc = gone_rc(a)) == ZKL_OK) {
    w->handle = ++a->next_handle;
    zkl__wire_begin(&b, ZKL_MSG_WATCH_LEADER, ++a->next_req);
    zkl__wire_i32(&b, w->handle);
    zkl__wire_str(&b, name);
    rc = send_locked(a, &b);
  }
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    free(w);
    return rc;
  }
  a->refs++;
  zkl__list_push(&a->watches, &w->link);
  pthread_mutex_unlock(&s->mu);
  pthread_mutex_lock(&reg_mu);
  w->reg_next = reg;
  reg = w;
  pthread_mutex_unlock(&reg_mu);
  *out = (zkl_leader_watch *)w;
  return ZKL_OK;
}

bool zkl__remote_leader_watch_free(zkl_leader_watch *lw) {
  zkl_rwatch **p, *w = NULL;
  zkl_agent *a;
  zkl_session *s;
  pthread_mutex_lock(&reg_mu);
  for (p = &reg; *p; p = &(*p)->reg_next)
    if (*p == (zkl_rwatch *)lw) {
      w = *p;
      *p = w->reg_next;
      break;
    }
  pthread_mutex_unlock(&reg_mu);
  if (!w)
    return false;
  a = w->a;
  s = a->s;
  pthread_mutex_lock(&s->mu);
  w->freed = true;
  zkl__list_remove(&w->link);
  if (gone_rc(a) == ZKL_OK) {
    zkl_wbuf b = {0};
    zkl__wire_begin(&b, ZKL_MSG_UNWATCH, ++a->next_req);
    zkl__wire_i32(&b, w->handle);
    send_locked(a, &b);
  }
  if (w->refs == 1 && a->refs == 1 && !a->detached) {
    /* The last of the session (closed before): it goes with the watch. */
    pthread_mutex_unlock(&s->mu);
    free(w);
    agent_free(a);
    return true;
  }
  rwatch_unref_locked(w);
  pthread_mutex_unlock(&s->mu);
  return true;
}

#ifdef ZKL_TEST_HOOKS
void zkl__test_agent_hold_reads(zkl_session *s, bool hold) {
  zkl_agent *a = agent_of(s);
  pthread_mutex_lock(&s->mu);
  a->test_hold_reads = hold;
  wake(a);
  pthread_mutex_unlock(&s->mu);
}
#endif

int zkl__remote_unsupported(const char *what) {
  zkl__log("%s: not served through the agent (zklockd(8)); open a session "
           "on ZooKeeper for it",
           what);
  return ZKL_EINVAL;
}
