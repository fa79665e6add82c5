/* SPDX-License-Identifier: Apache-2.0 */
/* test_async.c - the watch-callback API: every callback runs exactly once,
 * on the completion thread, for success, timeout, cancel, loss, free and
 * close; callbacks may call non-blocking functions and get ZKL_EDEADLK from
 * blocking ones; 1,000 locks on one session without a thread per lock. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000
#define T_WAIT 10000

/* Callbacks record into a zkt_rec (rc, token, thread, lock), which the
 * test thread reads once it has seen the call: no assertion runs on the
 * completion thread. */

static void test_success_once(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_rec a, r;
  zkt_rec_init(&a);
  zkt_rec_init(&r);
  zkt_name(name, sizeof name, "async-ok");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT(a.token > 0);
  CU_ASSERT_EQUAL(zkl_lock_token(l), a.token);
  CU_ASSERT_PTR_EQUAL(a.lock, l);
  CU_ASSERT(!pthread_equal(a.thread, pthread_self()));
  CU_ASSERT_EQUAL_FATAL(zkl_lock_release_async(l, zkt_on_released, &r), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&r.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(r.rc, ZKL_OK);
  CU_ASSERT(pthread_equal(r.thread, a.thread)); /* the completion thread */
  /* a release callback may be NULL */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_release_async(l, NULL, NULL), ZKL_OK);
  zkt_assert_quiet(s);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 2);
  CU_ASSERT_EQUAL(zkt_counter_get(&r.calls), 1);
  zkt_assert_parent_empty(name);
}

static void test_reentrant_async(void) {
  char name[64], path[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_rec a, b, r;
  zkt_rec_init(&a);
  zkt_rec_init(&b);
  zkt_rec_init(&r);
  zkt_name(name, sizeof name, "async-reentrant");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &b),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&b.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(b.rc, ZKL_OK);
  CU_ASSERT_EQUAL(b.token, a.token);
  CU_ASSERT(!pthread_equal(b.thread, pthread_self()));
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_release_async(l, zkt_on_released, &r), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&r.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), path, 0, NULL), ZOK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_release_async(l, zkt_on_released, &r), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&r.calls, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), path, 0, NULL), ZNONODE);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}


static void test_timeout_once(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec a;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-timeout");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, 200, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(a.token, 0);
  /* its node was gone before the callback ran */
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  zkt_assert_quiet(s);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
}

static void test_try_once_busy(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec a;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-try");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, 0, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
}

static void test_cancel_once(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec a;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-cancel");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                  ZKL_EINPROGRESS);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECANCELED);
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_EIDLE);
  zkt_assert_quiet(s);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
}

/* Cancel while the create is still on its way: the node it makes is
 * deleted, and the callback still runs once. */
static void test_cancel_immediately(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_rec a;
  int rc;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-cancel-now");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  rc = zkl_lock_cancel(l);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  /* The grant may win the race; either way exactly one outcome. (That
   * the cancel said OK or EIDLE was not checked: an error of the cancel
   * passed as "the grant won".) */
  CU_ASSERT(rc == ZKL_OK || rc == ZKL_EIDLE);
  CU_ASSERT(rc == ZKL_OK ? a.rc == ZKL_ECANCELED : a.rc == ZKL_OK);
  if (a.rc == ZKL_OK)
    CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkt_assert_quiet(s);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
}

/* A callback that keeps the completion thread busy until told to go. */
typedef struct {
  zkt_counter entered, go;
} gate;

static void on_acquired_gate(zkl_lock *l, int rc, int64_t token, void *arg) {
  gate *g = arg;
  (void)l;
  (void)rc;
  (void)token;
  zkt_counter_add(&g->entered, 1);
  zkt_counter_wait(&g->go, 1, 3 * T_WAIT);
}

/* Cancel after the predecessor's delete event has reached the client but
 * before it was delivered: the client then no longer holds the watcher
 * (removing it says ZNOWATCHER), yet will still call it with our record.
 * The record must outlive that call. (A use-after-free found by a stress
 * run under ASan; ASan and valgrind run this test.) */
static void test_cancel_event_queued(void) {
  char name[64], name2[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l, *busy;
  zkt_holder h;
  zkt_rec a, b;
  gate g;
  struct Stat st;
  zkt_rec_init(&a);
  zkt_rec_init(&b);
  zkt_counter_init(&g.entered);
  zkt_counter_init(&g.go);
  zkt_name(name, sizeof name, "async-cancel-queued");
  zkt_name(name2, sizeof name2, "async-cancel-gate");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  /* the watch on the holder's node is set */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, T_WAIT), 0);
  /* Hold the completion thread in a callback of another lock. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&busy, s, name2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(busy, -1, on_acquired_gate, &g), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&g.entered, 1, T_WAIT), 1);
  /* The holder goes; the event for our watch queues behind the gate. A
   * synchronous request on the same connection is answered on the client's
   * I/O thread, after the event that came before it: once it returns, the
   * client has taken the watcher out of its table. */
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_exists(zkl_session_handle(s), "/", 0, &st), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  zkt_counter_add(&g.go, 1); /* now the event is delivered */
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECANCELED);
  zkt_assert_parent_empty(name); /* its node went */
  CU_ASSERT_EQUAL(zkl_lock_release_async(busy, zkt_on_released, &b), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&b.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(b.rc, ZKL_OK);
  zkl_lock_free(busy);
  zkl_lock_free(l);
  zkt_assert_quiet(s); /* the event came, and the record went with it */
  zkl_lock_free(h.l);
  zkl_session_close(h.s, NULL);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(name2);
}

static void test_loss_once(void) {
  char name[64], path[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_rec a, lost;
  zkt_rec_init(&a);
  zkt_rec_init(&lost);
  zkt_name(name, sizeof name, "async-lost");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lost.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(lost.rc, ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkl_lock_release_async(l, zkt_on_released, &a), ZKL_ELOST);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
}

static void test_free_pending(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec a;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-free");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, T_WAIT), 1);
  zkt_assert_quiet(s);
  zkt_unhold(&h);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  zkt_assert_parent_empty(name);
}

/* A held lock freed without release: its node goes too. */
static void test_free_held(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_name(name, sizeof name, "async-free-held");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_parent_empty(name);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
}

static void test_close_pending(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l, *held;
  zkt_holder h;
  zkt_rec a;
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "async-close");
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&held, s, "async-close-held"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  zkl_session_close(s, NULL); /* returns after the callbacks ran */
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECLOSED);
  /* Locks outlive their session, dead. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, 0, zkt_on_acquired, &a),
                  ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_release(held), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_release_async(held, NULL, NULL), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_token(held), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 1); /* refused: no callback */
  /* every call, as the header says (these once said EIDLE, ENOTHELD
   * and OK) */
  {
    char path[ZKL_PATH_MAX];
    CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_ECLOSED);
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(held, path, sizeof path), ZKL_ECLOSED);
    CU_ASSERT_EQUAL(zkl_lock_set_acl(l, ZKL_ACL_OPEN), ZKL_ECLOSED);
    CU_ASSERT_EQUAL(zkl_lock_set_owner_info(l, "x"), ZKL_ECLOSED);
  }
  zkl_lock_free(l);
  zkl_lock_free(held);
  zkt_unhold(&h);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty("async-close-held");
}

/* ------------------------------------------------ what callbacks may do */

/* What the callback saw and got, for the test thread to assert. */
typedef struct {
  zkl_session *s;
  zkl_session *opened, *wrapped; /* set only if those wrongly succeeded */
  int cb_rc, acquire_rc, release_rc, open_rc, wrap_rc, release_async_rc;
  zkt_counter tried, done;
} in_cb;

static void cb_release_and_free(zkl_lock *l, int rc, void *arg) {
  in_cb *c = arg;
  (void)rc;
  zkl_lock_free(l); /* freeing the lock in hand is allowed */
  zkt_counter_add(&c->done, 1);
}

static void cb_try_blocking(zkl_lock *l, int rc, int64_t token, void *arg) {
  in_cb *c = arg;
  (void)token;
  c->cb_rc = rc;
  c->acquire_rc = zkl_lock_acquire(l, 0, NULL);
  c->release_rc = zkl_lock_release(l);
  c->open_rc = zkt_open(&c->opened, zkt_hosts(), 1000, 0, 0);
  c->wrap_rc = zkt_wrap(&c->wrapped, zkl_session_handle(c->s));
  /* Non-blocking calls work: release from inside the callback. */
  c->release_async_rc = zkl_lock_release_async(l, cb_release_and_free, c);
  zkt_counter_add(&c->tried, 1);
}

static void test_callback_rules(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  in_cb c = {0};
  zkt_counter_init(&c.tried);
  zkt_counter_init(&c.done);
  c.s = s;
  zkt_name(name, sizeof name, "async-rules");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, cb_try_blocking, &c),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&c.tried, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(c.cb_rc, ZKL_OK);
  CU_ASSERT_EQUAL(c.release_async_rc, ZKL_OK);
  if (c.release_async_rc == ZKL_OK) {
    CU_ASSERT_EQUAL(zkt_counter_wait(&c.done, 1, T_WAIT), 1);
  } else {
    zkl_lock_free(l); /* the callback that frees it will not run */
  }
  CU_ASSERT_EQUAL(c.acquire_rc, ZKL_EDEADLK);
  CU_ASSERT_EQUAL(c.release_rc, ZKL_EDEADLK);
  CU_ASSERT_EQUAL(c.open_rc, ZKL_EDEADLK);
  CU_ASSERT_EQUAL(c.wrap_rc, ZKL_EDEADLK);
  zkl_session_close(c.wrapped, NULL); /* NULL unless wrongly opened */
  zkl_session_close(c.opened, NULL);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------------ many locks */

#define MANY 1000

static zkt_counter many_acquired, many_released;
static int many_failures;

static void many_released_cb(zkl_lock *l, int rc, void *arg) {
  (void)l;
  (void)arg;
  if (rc != ZKL_OK)
    __sync_fetch_and_add(&many_failures, 1);
  zkt_counter_add(&many_released, 1);
}

static void many_acquired_cb(zkl_lock *l, int rc, int64_t token, void *arg) {
  (void)l;
  (void)arg;
  if (rc != ZKL_OK || token <= 0)
    __sync_fetch_and_add(&many_failures, 1);
  zkt_counter_add(&many_acquired, 1);
}

static void test_thousand_locks(void) {
  zkl_session *s = zkt_session(30000);
  zkl_lock **locks = calloc(MANY, sizeof *locks);
  char base[64], name[96];
  int i, n, threads_before, threads_during;
  CU_ASSERT_PTR_NOT_NULL_FATAL(locks);
  zkt_counter_init(&many_acquired);
  zkt_counter_init(&many_released);
  many_failures = 0;
  zkt_name(base, sizeof base, "many");
  threads_before = zkt_thread_count();
  for (i = 0; i < MANY; i++) {
    snprintf(name, sizeof name, "%s/%d", base, i);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&locks[i], s, name), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire_async(locks[i], -1, many_acquired_cb, NULL),
                    ZKL_OK);
  }
  threads_during = zkt_thread_count();
  CU_ASSERT_EQUAL(zkt_counter_wait(&many_acquired, MANY, 60000), MANY);
  CU_ASSERT_EQUAL(threads_during, threads_before); /* no thread per lock */
  CU_ASSERT_EQUAL(zkt_thread_count(), threads_before);
  for (i = 0; i < MANY; i++)
    CU_ASSERT_EQUAL(zkl_lock_release_async(locks[i], many_released_cb, NULL),
                    ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&many_released, MANY, 60000), MANY);
  CU_ASSERT_EQUAL(many_failures, 0);
  for (i = 0; i < MANY; i++)
    zkl_lock_free(locks[i]);
  free(locks);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  snprintf(name, sizeof name, "/locks/%s", base);
  for (i = 0; i < MANY; i += 97) { /* a sample of the parents */
    char p[160];
    snprintf(p, sizeof p, "%s/%d", name, i);
    n = zkt_children(p); /* right after the close: empty, or reaped */
    CU_ASSERT(n == 0 || n == -1);
  }
  CU_ASSERT_EQUAL(zkt_counter_get(&many_acquired), MANY);
  CU_ASSERT_EQUAL(zkt_counter_get(&many_released), MANY);
}

int main(void) {
  static const zkt_test tests[] = {
      {"success: callbacks once", test_success_once},
      {"a second async acquire of a held lock is granted on the completion thread, same token", test_reentrant_async},
      {"timeout: callback once", test_timeout_once},
      {"try once, busy", test_try_once_busy},
      {"cancel: callback once", test_cancel_once},
      {"cancel right after start", test_cancel_immediately},
      {"cancel with the watch event queued", test_cancel_event_queued},
      {"loss: callback once", test_loss_once},
      {"free with an acquire pending", test_free_pending},
      {"free while held", test_free_held},
      {"session close with an acquire pending", test_close_pending},
      {"what callbacks may call", test_callback_rules},
      {"1000 locks on one session are granted and released with no thread per lock", test_thousand_locks},
      {NULL, NULL}};
  return zkt_main("async", tests);
}
