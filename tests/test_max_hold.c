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

/* The lost callback: its reason and thread, and the token then. */
typedef struct {
  zkt_rec rec;
  int64_t token_then;
} lost_t;

static void on_lost(zkl_lock *l, int reason, void *arg) {
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
  zkl_session_close(s);
  zkl_session_close(ws);
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
  zkl_session_close(s);
  zkl_session_close(ws);
  zkt_assert_parent_empty(name);
}

/* A semaphore's lease and a read/write lock's write side. */
static void test_kinds(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION), *ws = zkt_session(T_SESSION);
  zkl_lock *l, *w;
  zkl_rwlock *rw, *wrw;
  zkt_name(name, sizeof name, "max-hold-sem");
  CU_ASSERT_EQUAL_FATAL(zkl_semaphore_new(&l, s, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_semaphore_new(&w, ws, name, 1), ZKL_OK);
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
  zkl_session_close(s);
  zkl_session_close(ws);
  zkt_assert_no_contender(name);
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
  zkl_session_close(s);
  zkt_assert_parent_empty(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"a hung holder loses at its maximum", test_hung_holder},
      {"reentrant holds count from the grant", test_reentrant},
      {"a lease and a write side", test_kinds},
      {"a hold within its bound", test_within_bound},
      {NULL, NULL}};
  return zkt_main("max-hold", tests);
}
