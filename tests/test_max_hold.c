/* SPDX-License-Identifier: Apache-2.0 */
/* test_max_hold.c - a hold that cannot last forever
 * (zkl_lock_set_max_hold()), against a real ZooKeeper: a holder whose
 * thread is blocked on a condition the test controls loses the lock with
 * ZKL_LOST_MAX_HOLD, told on another thread (the library's timer thread),
 * its token reads 0, the waiter is granted with a higher token, and the
 * blocked thread's release, once it wakes, says ZKL_ELOST; the same for a
 * semaphore's lease and a reentrant hold; a hold shorter than its bound is
 * untouched; bad input is refused. Nothing is left behind. No test claims
 * how long anything takes: each waits for a condition, with a bound. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000
#define MAX_HOLD 300 /* ms; the waits below are bounded by ZKT_WAIT */
#define LONG_GRACE 120000 /* the test that uses it never waits it out */

/* The lost callback: its reason and thread, and the token then. */
typedef struct {
  zkt_rec rec;
  int64_t token_then;
} lost_t;

static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  lost_t *lt = arg;
  lt->token_then = zkl_lock_token(l);
  zkt_on_lost(l, reason, &lt->rec);
}

/* The events of the session, for the LOST one. */
typedef struct {
  zkt_counter lost;
  int reason;
} events_t;

static void on_event(zkl_session *s, const zkl_event *ev, void *arg) {
  events_t *e = arg;
  (void)s;
  if (ev->type == ZKL_EVENT_LOST) {
    e->reason = ev->reason;
    zkt_counter_add(&e->lost, 1);
  }
}

/* A holder thread that hangs: it acquires, says so, and blocks until the
 * test lets it go; then it releases. */
typedef struct {
  zkl_lock *l;
  int reentries; /* extra acquires while holding */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool go;
  zkt_counter held;
  int64_t token;
  int acquire_rc, release_rc, release2_rc;
  pthread_t self;
} hung;

static void *hung_main(void *arg) {
  hung *h = arg;
  int i;
  h->self = pthread_self();
  h->acquire_rc = zkl_lock_acquire(h->l, ZKT_WAIT, &h->token);
  for (i = 0; i < h->reentries && h->acquire_rc == ZKL_OK; i++)
    h->acquire_rc = zkl_lock_acquire(h->l, 0, NULL);
  zkt_counter_add(&h->held, 1);
  pthread_mutex_lock(&h->mu);
  while (!h->go) /* the hang: no call into the library meanwhile */
    pthread_cond_wait(&h->cond, &h->mu);
  pthread_mutex_unlock(&h->mu);
  h->release_rc = zkl_lock_release(h->l);
  h->release2_rc = zkl_lock_release(h->l);
  return NULL;
}

static void hung_start(hung *h, pthread_t *th, zkl_lock *l, int reentries) {
  memset(h, 0, sizeof *h);
  h->l = l;
  h->reentries = reentries;
  pthread_mutex_init(&h->mu, NULL);
  pthread_cond_init(&h->cond, NULL);
  zkt_counter_init(&h->held);
  CU_ASSERT_EQUAL_FATAL(pthread_create(th, NULL, hung_main, h), 0);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&h->held, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(h->acquire_rc, ZKL_OK);
}

static void hung_wake(hung *h, pthread_t th) {
  pthread_mutex_lock(&h->mu);
  h->go = true;
  pthread_cond_signal(&h->cond);
  pthread_mutex_unlock(&h->mu);
  pthread_join(th, NULL);
}

/* l (on session s) is held by a hung thread, with a waiter w on another
 * session: the maximum hold ends the hold on another thread, w is granted
 * above it, and the hung thread's release says ZKL_ELOST. */
static void run_hung(zkl_session *s, zkl_lock *l, zkl_lock *w,
                     int reentries) {
  hung h;
  pthread_t th;
  lost_t lost;
  events_t ev;
  zkt_rec granted;
  zkl_lock_stats st;
  memset(&lost, 0, sizeof lost);
  zkt_rec_init(&lost.rec);
  memset(&ev, 0, sizeof ev);
  zkt_counter_init(&ev.lost);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, on_event, &ev), ZKL_OK);
  zkl_lock_on_lost(l, on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, MAX_HOLD), ZKL_OK);
  hung_start(&h, &th, l, reentries);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired,
                                               &granted),
                        ZKL_OK);

  CU_ASSERT_EQUAL(zkt_rec_wait(&lost.rec, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  CU_ASSERT(!pthread_equal(lost.rec.thread, h.self));
  CU_ASSERT_EQUAL(lost.token_then, 0);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&ev.lost, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(ev.reason, ZKL_LOST_MAX_HOLD);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(granted.token > h.token);

  hung_wake(&h, th); /* it wakes, and releases what it thinks it holds */
  CU_ASSERT_EQUAL(h.release_rc, ZKL_ELOST);
  CU_ASSERT_EQUAL(h.release2_rc, ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost.rec, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.rec.calls), 1);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.losses, 1);
  CU_ASSERT_EQUAL(st.releases, 0);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  zkl_session_on_event(s, NULL, NULL);
  pthread_cond_destroy(&h.cond);
  pthread_mutex_destroy(&h.mu);
}

static void test_hung_holder(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  zkt_name(name, sizeof name, "max-hold");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, name), ZKL_OK);
  run_hung(s, l, w, 0);
  /* the next hold of l is bounded as well, and can be unbounded again */
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_parent_empty(name);
}

/* Three holds on one node: the maximum counts from the grant. */
static void test_reentrant(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  zkt_name(name, sizeof name, "max-hold-reentrant");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, name), ZKL_OK);
  run_hung(s, l, w, 2);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_parent_empty(name);
}

/* A semaphore's lease and a read/write lock's write side. */
static void test_kinds(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  zkl_rwlock *rw, *wrw;
  zkt_name(name, sizeof name, "max-hold-sem");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l, s, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&w, ws, name, 1), ZKL_OK);
  run_hung(s, l, w, 0);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_no_contender(name);

  zkt_name(name, sizeof name, "max-hold-rw");
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&wrw, ws, name), ZKL_OK);
  run_hung(s, zkl_rwlock_write(rw), zkl_rwlock_read(wrw), 0);
  zkl_rwlock_free(rw);
  zkl_rwlock_free(wrw);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_no_contender(name);
}

/* ------------------------------------------------ the node after the end */

/* What the lost callback saw: the holder's own node, asked on the holder's
 * own connection (a delete the library sent before the callback would be
 * answered first), and whether the waiter had been granted. */
typedef struct {
  zkt_rec rec;
  zhandle_t *zh;
  char path[ZKL_PATH_MAX + 512];
  zkt_counter *waiter_granted;
  int exists_rc, granted_then;
} seen_t;

static void on_lost_look(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  seen_t *sn = arg;
  sn->exists_rc = zoo_exists(sn->zh, sn->path, 0, NULL);
  sn->granted_then = zkt_counter_get(sn->waiter_granted);
  zkt_on_lost(l, reason, &sn->rec);
}

/* The queue of NAME: a gate holder, then h (the lock l on session s, its
 * maximum hold and grace set), then the waiter w; h's node path is known
 * before h is granted, and h is granted once the gate lets go. */
typedef struct {
  zkl_session *gs;
  zkl_lock *gate;
  seen_t seen;
  zkt_rec h_granted, w_granted;
  char parent[512];
} queued;

static void queue_up(queued *q, const char *name, zkl_session *s, zkl_lock *l,
                     zkl_lock *w, int grace_ms) {
  struct String_vector kids = {0, NULL};
  int i, lowest = 0, second = -1;
  int32_t seq[3];
  memset(q, 0, sizeof *q);
  zkt_rec_init(&q->seen.rec);
  zkt_rec_init(&q->h_granted);
  zkt_rec_init(&q->w_granted);
  q->seen.zh = zkl_session_handle(s);
  q->seen.waiter_granted = &q->w_granted.calls;
  zkt_parent(q->parent, sizeof q->parent, name);
  q->gs = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&q->gate, q->gs, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(q->gate, ZKT_WAIT, NULL), ZKL_OK);
  zkl_lock_on_lost(l, on_lost_look, &q->seen);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, MAX_HOLD), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold_grace(l, grace_ms), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(l, -1, zkt_on_acquired, &q->h_granted), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(q->parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(w, -1, zkt_on_acquired, &q->w_granted), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(q->parent, 3, ZKT_WAIT), 3);
  /* h's node: the second by sequence number */
  CU_ASSERT_EQUAL_FATAL(zoo_get_children(zkt_observer(), q->parent, 0, &kids),
                        ZOK);
  CU_ASSERT_EQUAL_FATAL(kids.count, 3);
  for (i = 0; i < 3; i++)
    CU_ASSERT_FATAL(zkl__parse_seq(kids.data[i], &seq[i]));
  for (i = 1; i < 3; i++)
    if (seq[i] < seq[lowest])
      lowest = i;
  for (i = 0; i < 3; i++)
    if (i != lowest && (second < 0 || seq[i] < seq[second]))
      second = i;
  snprintf(q->seen.path, sizeof q->seen.path, "%s/%s", q->parent,
           kids.data[second]);
  deallocate_String_vector(&kids);
  /* the gate lets go: h holds, and its maximum hold runs */
  CU_ASSERT_EQUAL(zkl_lock_release(q->gate), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_rec_wait(&q->h_granted, 1, ZKT_WAIT), ZKL_OK);
}

static void queue_done(queued *q) {
  zkl_lock_free(q->gate);
  zkt_assert_quiet(q->gs);
  zkl_session_close(q->gs, NULL);
}

/* Grace 0: nobody is granted while the lost callback runs; its node is
 * still there, as its own connection tells (before, the library sent the
 * delete first and told the holder after). Then the waiter is granted. */
static void test_told_before_the_node_goes(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  queued q;
  zkt_name(name, sizeof name, "max-hold-order");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, name), ZKL_OK);
  queue_up(&q, name, s, l, w, 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&q.seen.rec, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  CU_ASSERT_EQUAL(q.seen.exists_rc, ZOK);
  CU_ASSERT_EQUAL(q.seen.granted_then, 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&q.w_granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(q.w_granted.token > q.h_granted.token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  queue_done(&q);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_parent_empty(name);
}

/* A grace: the hold ended (token 0, a new acquire waits for the node to
 * go), the node stays and the waiter waits, until the holder's release,
 * which says ZKL_ELOST and lets the node go; or, never released, until the
 * grace runs out. */
static void test_grace(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  zkl_lock_stats st;
  queued q;
  int round;
  zkt_name(name, sizeof name, "max-hold-grace");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold_grace(NULL, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold_grace(l, -1), ZKL_EINVAL);
  for (round = 0; round < 2; round++) {
    /* round 0: released in a long grace; round 1: a short one runs out */
    queue_up(&q, name, s, l, w, round == 0 ? LONG_GRACE : MAX_HOLD);
    CU_ASSERT_EQUAL(zkt_rec_wait(&q.seen.rec, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
    CU_ASSERT_EQUAL(q.seen.exists_rc, ZOK);
    CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
    if (round == 0) {
      char path[ZKL_PATH_MAX];
      CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EINPROGRESS);
      CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_ENOTHELD);
      /* nothing is on its way that could let the node go */
      CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
      CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), q.seen.path, 0, NULL), ZOK);
      CU_ASSERT_EQUAL(zkt_counter_get(&q.w_granted.calls), 0);
      CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST); /* it stopped */
      CU_ASSERT_EQUAL(zkt_rec_wait(&q.w_granted, 1, ZKT_WAIT), ZKL_OK);
    } else {
      CU_ASSERT_EQUAL(zkt_rec_wait(&q.w_granted, 1, ZKT_WAIT), ZKL_OK);
      CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
    }
    CU_ASSERT(q.w_granted.token > q.h_granted.token);
    CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
    CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
    queue_done(&q);
  }
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.losses, 2);
  /* the lock is free for an ordinary hold again */
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_parent_empty(name);
}

/* A downgrade whose write side runs past its maximum: its node stays while
 * the read side holds, as at a release, so that the writer queued behind
 * it is not granted beside the reader; it goes with the read side. */
static void test_downgraded_write_side(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_rwlock *rw, *wrw;
  zkt_rec lost, granted;
  zkt_name(name, sizeof name, "max-hold-downgrade");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&lost);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&wrw, ws, name), ZKL_OK);
  zkl_lock_on_lost(zkl_rwlock_write(rw), zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(zkl_rwlock_write(rw), MAX_HOLD),
                  ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(zkl_rwlock_write(rw), ZKT_WAIT, NULL),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(zkl_rwlock_write(wrw), -1,
                                               zkt_on_acquired, &granted),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(zkl_rwlock_read(rw), ZKT_WAIT, NULL),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  /* the write side's end has settled: its node is kept */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_children(parent), 3);
  CU_ASSERT_EQUAL(zkt_counter_get(&granted.calls), 0);
  CU_ASSERT(zkl_lock_token(zkl_rwlock_read(rw)) > 0);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(rw)), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw)), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(wrw)), ZKL_OK);
  zkl_rwlock_free(rw);
  zkl_rwlock_free(wrw);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_no_contender(name);
}

/* A multi-lock past its maximum: told, and its names stay held by its
 * nodes through its grace (a waiter on one of them waits), then go
 * together at its release. */
static void test_multilock(void) {
  char a[64], b[64];
  const char *names[2] = {a, b};
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *m, *w;
  zkt_rec lost, granted;
  char parent[512];
  zkt_name(a, sizeof a, "max-hold-multi-a");
  zkt_name(b, sizeof b, "max-hold-multi-b");
  zkt_parent(parent, sizeof parent, b);
  zkt_rec_init(&lost);
  zkt_rec_init(&granted);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&m, s, names, 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, ws, b), ZKL_OK);
  zkl_lock_on_lost(m, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(m, MAX_HOLD), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold_grace(m, LONG_GRACE), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(m, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(w, -1, zkt_on_acquired, &granted), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  CU_ASSERT_EQUAL(zkl_lock_token(m), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_children(parent), 2);
  CU_ASSERT_EQUAL(zkt_counter_get(&granted.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(m), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkt_rec_wait(&granted, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  zkl_lock_free(m);
  zkl_lock_free(w);
  zkt_assert_quiet(s);
  zkt_assert_quiet(ws);
  zkl_session_close(s, NULL);
  zkl_session_close(ws, NULL);
  zkt_assert_parent_empty(a);
  zkt_assert_parent_empty(b);
}

/* A hold released within its bound is an ordinary hold; bad input. */
static void test_within_bound(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkl_lock_stats st;
  zkt_rec lost;
  zkt_name(name, sizeof name, "max-hold-ok");
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(NULL, 1000), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, -1), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, 3600 * 1000), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT(zkl_lock_token(l) > 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.losses, 0);
  CU_ASSERT_EQUAL(st.releases, 1);
  zkt_assert_quiet(s);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 0);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"a hung holder loses at its maximum", test_hung_holder},
      {"reentrant holds count from the grant", test_reentrant},
      {"a lease and a write side", test_kinds},
      {"a hold within its bound", test_within_bound},
      {"the holder is told before its node goes",
       test_told_before_the_node_goes},
      {"a grace, released or run out", test_grace},
      {"a downgraded write side keeps its node", test_downgraded_write_side},
      {"a multi-lock's names go together", test_multilock},
      {NULL, NULL}};
  return zkt_main("max-hold", tests);
}
