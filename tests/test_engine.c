/* SPDX-License-Identifier: Apache-2.0 */
/* test_engine.c - drives the attempt state machine through every edge of
 * its diagram (lib/engine.c), on a real ZooKeeper, with the fault proxy for
 * the edges that need a lost reply and the library's test hooks for the
 * ones that need a window.
 *
 * Each scenario asserts the edges it is there for (the engine counts every
 * transition it makes, per edge); the last test asserts that every edge of
 * the diagram was taken at least once in this run and that no transition
 * outside the diagram was ever attempted. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define OP_DELETE 2
#define OP_GETDATA 4
#define OP_GETCHILDREN 8
#define OP_CREATE2 15

#define S(x) ZKL_AS_##x

/* ------------------------------------------------------------- helpers */

static unsigned long snap[ZKL_AS_COUNT][ZKL_AS_COUNT];

static void snapshot(void) {
  int f, t;
  for (f = 0; f < ZKL_AS_COUNT; f++)
    for (t = 0; t < ZKL_AS_COUNT; t++)
      snap[f][t] = zkl__edge_count(f, t);
}

/* Asserts that edge from -> to was taken since the last snapshot. */
#define TAKEN(from, to) taken_at(S(from), S(to), __FILE__, __LINE__)
static void taken_at(int from, int to, const char *file, int line) {
  char what[120];
  bool ok = zkl__edge_count(from, to) > snap[from][to];
  snprintf(what, sizeof what, "the edge %s -> %s was taken",
           zkl__state_name(from), zkl__state_name(to));
  if (!ok) { /* what was taken instead: a CI log is all there is then */
    int f, t;
    printf("\n    not taken: %s -> %s; taken since the snapshot:",
           zkl__state_name(from), zkl__state_name(to));
    for (f = 0; f < ZKL_AS_COUNT; f++)
      for (t = 0; t < ZKL_AS_COUNT; t++)
        if (zkl__edge_count(f, t) > snap[f][t])
          printf(" %s -> %s (%lu)", zkl__state_name(f), zkl__state_name(t),
                 (unsigned long)(zkl__edge_count(f, t) - snap[f][t]));
  }
  CU_assertImplementation(ok, line, what, file, "", CU_FALSE);
}

/* Waits (bounded) until edge from -> to is taken: for an edge that another
 * session's change sets off, whose watch event may reach this session after
 * the observer has seen the change and this session looked settled. */
#define WAIT_TAKEN(from, to) wait_taken_at(S(from), S(to), __FILE__, __LINE__)
static void wait_taken_at(int from, int to, const char *file, int line) {
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  const struct timespec tick = {0, 2 * 1000 * 1000};
  while (zkl__edge_count(from, to) <= snap[from][to] &&
         zkt_now_ms() < deadline)
    nanosleep(&tick, NULL);
  taken_at(from, to, file, line);
}


static void wait_children(const char *name, int n) {
  char parent[512];
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, n, ZKT_WAIT), n);
}

static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  zkt_on_acquired(l, reason, 0, arg);
}

/* ----------------------------------------------------------- scenarios */

/* First use of a name, held, released; a try on a held lock; a waiter
 * granted when the lowest node goes; and a node deleted under a holder. */
static void test_plain_paths(void) {
  char name[64], path[512];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec rec;
  snapshot();
  zkt_name(name, sizeof name, "edges-plain");
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  TAKEN(NEW, CREATING);
  TAKEN(CREATING, CREATING); /* the parents were missing */
  TAKEN(CREATING, HELD);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  TAKEN(HELD, RELEASING);
  TAKEN(RELEASING, ENDED);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  TAKEN(CREATING, ENDING);
  TAKEN(ENDING, ENDED);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(name, 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  TAKEN(CREATING, WATCHING);
  zkt_unhold(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  TAKEN(WATCHING, HELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  zkt_rec_init(&rec);
  zkl_lock_on_lost(l, on_lost, &rec);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  TAKEN(HELD, ENDED);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A waiter whose predecessor (not the lowest) gives up lists again and
 * watches the next one; cancelled while watching. */
static void test_relist_and_cancel(void) {
  char name[64];
  zkl_session *s = zkt_session(10000);
  zkt_holder a, b;
  zkl_lock *l;
  zkt_rec rec;
  snapshot();
  zkt_name(name, sizeof name, "edges-relist");
  zkt_rec_init(&rec);
  zkt_hold(&a, name);
  b.s = zkt_session(10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b.l, b.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(b.l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(name, 2);
  /* b watches a: its node alone does not say its listing has returned
   * (under ASan in CI it was still LISTING when canceled below) */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(name, 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b.l), ZKL_OK); /* l's predecessor */
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  wait_children(name, 2);
  TAKEN(WATCHING, ENDING);
  WAIT_TAKEN(WATCHING, LISTING);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  TAKEN(LISTING, WATCHING);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 2, ZKT_WAIT), ZKL_ECANCELED);
  /* and once more, granted from the listing */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(name, 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(b.l, -1, zkt_on_acquired, &rec),
                  ZKL_OK); /* a third, behind l: l is not the lowest's... */
  wait_children(name, 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  /* ...so when l's predecessor (a, the lowest) goes, l holds at once, and
   * when l gives up, b lists: it is first now */
  zkt_unhold(&a);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 3, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 4, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(b.l), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(b.l);
  zkt_assert_quiet(s);
  zkt_assert_quiet(b.s);
  zkl_session_close(s, NULL);
  zkl_session_close(b.s, NULL);
  zkt_assert_parent_empty(name);
}

/* Grants with less than half a lease ahead wait for a fresher one
 * (CONFIRMING), then list once more: after a creating, a listing and a
 * watch event (zkl__test_stale_grants makes them stale); and one held
 * waiting (zkl__test_hold_confirming) is canceled, or goes once let. */
static void test_stale_grants(void) {
  char name[64];
  zkl_session *s = zkt_session(10000);
  zkt_holder h;
  zkl_lock *l;
  zkt_rec rec;
  zkt_rec_init(&rec);
  snapshot();
  zkt_name(name, sizeof name, "edges-stale");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  __atomic_store_n(&zkl__test_stale_grants, 2, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(__atomic_load_n(&zkl__test_stale_grants, __ATOMIC_RELAXED),
                  0);
  TAKEN(CREATING, CONFIRMING);
  TAKEN(CONFIRMING, LISTING);
  TAKEN(LISTING, CONFIRMING);
  TAKEN(LISTING, HELD);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);

  /* a grant held waiting: canceled there, or let go on */
  snapshot();
  __atomic_store_n(&zkl__test_hold_confirming, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&zkl__test_stale_grants, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
  TAKEN(CREATING, CONFIRMING);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(CONFIRMING, ENDING);
  __atomic_store_n(&zkl__test_stale_grants, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 1);
  /* the beats tick the clock every P/2: it looks again */
  __atomic_store_n(&zkl__test_hold_confirming, 0, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 2, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);

  /* a grant on the deletion of the node waited for */
  snapshot();
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  TAKEN(CREATING, WATCHING);
  __atomic_store_n(&zkl__test_stale_grants, 1, __ATOMIC_RELAXED);
  zkt_unhold(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 3, ZKT_WAIT), ZKL_OK);
  TAKEN(WATCHING, CONFIRMING);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A semaphore's places under a mutex's name are looked in before any
 * verdict (kinds.h): from a creating's listing, and from a later listing
 * when they appear meanwhile. */
static void test_places_looked_in(void) {
  char name[64], parent[512], place[600];
  zkl_session *s = zkt_session(10000);
  zkt_holder h;
  zkl_lock *l;
  zkt_rec rec;
  zkt_rec_init(&rec);
  snapshot();
  zkt_name(name, sizeof name, "edges-places");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  /* places there from the start (empty: no semaphore holds) */
  zkt_hold(&h, name);
  snprintf(place, sizeof place, "%s/leases", parent);
  CU_ASSERT_EQUAL_FATAL(zoo_create(zkt_observer(), place, NULL, -1,
                                   &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL,
                                   0),
                        ZOK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  TAKEN(CREATING, LISTING);
  /* and seen only by a later listing: the grant is made stale, so that it
   * lists once more after waiting for the lease */
  CU_ASSERT_EQUAL_FATAL(zoo_delete(zkt_observer(), place, -1), ZOK);
  snapshot();
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL_FATAL(zoo_create(zkt_observer(), place, NULL, -1,
                                   &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL,
                                   0),
                        ZOK);
  __atomic_store_n(&zkl__test_stale_grants, 1, __ATOMIC_RELAXED);
  zkt_unhold(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  TAKEN(CONFIRMING, LISTING);
  TAKEN(LISTING, LISTING);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  (void)zoo_delete(zkt_observer(), place, -1);
  zkt_assert_parent_empty(name);
}

/* The semaphore: the gate, waiting for the queue to change, and ending
 * while at the gate or waiting for a lease. */
static void test_gate_and_queue(void) {
  char name[64];
  zkl_session *s[3];
  zkl_lock *l[3];
  zkt_rec r1, r2;
  int i;
  snapshot();
  zkt_name(name, sizeof name, "edges-sem");
  zkt_rec_init(&r1);
  zkt_rec_init(&r2);
  for (i = 0; i < 3; i++) {
    s[i] = zkt_session(10000);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l[i], s[i], name, 1), ZKL_OK);
  }
  /* through the gate, as when the first try is off */
  __atomic_store_n(&zkl__test_no_first_try, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l[0], ZKT_WAIT, NULL), ZKL_OK);
  __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
  TAKEN(NEW, PREPARING);
  TAKEN(PREPARING, CREATING);
  /* the first try finds the lease taken: its node goes, it takes the gate
   * and waits for the lease */
  snapshot();
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l[1], -1, zkt_on_acquired, &r1),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s[1], ZKT_WAIT), 0);
  TAKEN(CREATING, PREPARING);
  TAKEN(PREPARING, CREATING);
  TAKEN(CREATING, WAITING);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l[2], -1, zkt_on_acquired, &r2),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s[2], ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l[2]), ZKL_OK); /* at the gate */
  CU_ASSERT_EQUAL(zkt_rec_wait(&r2, 1, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(PREPARING, ENDING);
  /* the lease queue changes (a try-once comes and goes): l1 looks again
   * and waits again */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l[2], 0, NULL), ZKL_EBUSY);
  WAIT_TAKEN(WAITING, LISTING);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s[1], ZKT_WAIT), 0);
  TAKEN(LISTING, WAITING);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l[1]), ZKL_OK); /* waiting for a lease */
  CU_ASSERT_EQUAL(zkt_rec_wait(&r1, 1, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(WAITING, ENDING);
  CU_ASSERT_EQUAL(zkl_lock_release(l[0]), ZKL_OK);
  for (i = 0; i < 3; i++) {
    zkl_lock_free(l[i]);
    zkt_assert_quiet(s[i]);
    zkl_session_close(s[i], NULL);
  }
  {
    char sub[128];
    snprintf(sub, sizeof sub, "%s/leases", name);
    zkt_assert_parent_empty(sub);
    snprintf(sub, sizeof sub, "%s/locks", name);
    zkt_assert_parent_empty(sub);
  }
}

/* Started while disconnected, resumed at the reconnect; and cancelled
 * while suspended. */
static void test_suspended_start(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkt_rec rec;
  snapshot();
  zkt_name(name, sizeof name, "edges-offline");
  zkt_rec_init(&rec);
  zkt_proxied_open(&p, 5000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  TAKEN(NEW, SUSPENDED);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(SUSPENDED, ENDING);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 2, ZKT_WAIT), ZKL_OK);
  TAKEN(SUSPENDED, CREATING);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* A semaphore's first try whose create reply is lost: recovered, adopted,
 * and its first verdict, in LISTING, finds the lease taken: it gives way
 * to the gate from there. */
static void test_first_try_recovered(void) {
  char name[64];
  zkt_proxied p;
  zkl_session *hs = zkt_session(10000);
  zkl_lock *h, *l;
  zkt_rec rec;
  snapshot();
  zkt_name(name, sizeof name, "edges-first-try");
  zkt_rec_init(&rec);
  zkt_proxied_open(&p, 5000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&h, hs, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l, p.s, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK); /* parents */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h, ZKT_WAIT, NULL), ZKL_OK);
  /* the try's create goes through, its reply is lost; reconnects held */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_suspended(p.s, 1, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  TAKEN(RECOVERING, LISTING);
  TAKEN(LISTING, PREPARING);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(h);
  zkl_lock_free(l);
  zkt_assert_quiet(hs);
  zkt_assert_quiet(p.s);
  zkl_session_close(hs, NULL);
  zkt_proxied_close(&p);
  {
    char sub[128];
    snprintf(sub, sizeof sub, "%s/leases", name);
    zkt_assert_parent_empty(sub);
    snprintf(sub, sizeof sub, "%s/locks", name);
    zkt_assert_parent_empty(sub);
  }
}

/* Whether l's attempt is (or comes to be, within ZKT_WAIT) in state; says
 * where it is otherwise. */
static bool wait_state(zkl_lock *l, zkl_att_state want) {
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  zkl_att_state at = ZKL_AS_COUNT;
  for (;;) {
    zkt_counter never; /* a bounded poll of the attempt's state */
    pthread_mutex_lock(&l->s->mu);
    at = l->att ? zkl__attempt_state(l->att) : ZKL_AS_COUNT;
    pthread_mutex_unlock(&l->s->mu);
    if (at == want || zkt_now_ms() >= deadline)
      break;
    zkt_counter_init(&never);
    zkt_counter_wait(&never, 1, 10);
  }
  if (at != want)
    printf("\n    the attempt is in %s, not %s",
           at == ZKL_AS_COUNT ? "none" : zkl__state_name(at),
           zkl__state_name(want));
  return at == want;
}

/* A create whose reply is lost: recovered and adopted, the recovery's own
 * listing lost once too; and a create that never reached the server. */
static void test_recovery(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkt_rec rec;
  snapshot();
  zkt_name(name, sizeof name, "edges-recover");
  zkt_rec_init(&rec);
  zkt_proxied_open(&p, 5000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK); /* parents */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  /* the create goes through, its reply is lost; reconnects are held */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_suspended(p.s, 1, ZKT_WAIT), 0);
  TAKEN(CREATING, SUSPENDED);
  /* the recovery's listing is lost too, then it goes through */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 8"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  TAKEN(SUSPENDED, RECOVERING);
  TAKEN(RECOVERING, SUSPENDED);
  TAKEN(RECOVERING, LISTING); /* adopted */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  /* a create that never reaches the server: found nowhere, made again */
  snapshot();
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 2, ZKT_WAIT), ZKL_OK);
  TAKEN(RECOVERING, CREATING);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  /* cancelled while recovering: the recovery's listing goes, its reply is
   * swallowed and the attempt waits there */
  snapshot();
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, ZKT_WAIT), 0);
  /* The attempt has heard its create's reply is lost (SUSPENDED) before
   * the trigger is armed: a fresh-clone CI run saw the op 8 fire while the
   * attempt was still CREATING (the cancel then went CREATING -> ENDING),
   * the lost connection's completions not yet delivered. */
  CU_ASSERT_EQUAL(zkl__debug_wait_suspended(p.s, 1, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop-after-op 8"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  /* the op 8 dropped is the recovery's listing: the attempt waits there */
  CU_ASSERT(wait_state(l, ZKL_AS_RECOVERING));
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 3, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(RECOVERING, ENDING);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* A waiter loses replies: the getData that watches its predecessor, and a
 * listing (its node known: it lists again at the reconnect). */
/* Runs on the completion thread, just before the watch on the predecessor
 * is sent: from then the proxy drops every byte, so that getData's reply
 * is lost (the client gives the connection up after 2/3 of the session
 * timeout); it says so. It records; the test thread asserts, and does not
 * touch the proxy meanwhile (proxyctl is not thread-safe). */
static zkt_proxied *hooked;
static char hooked_pred[512]; /* only the watch on this node */
static zkt_counter hook_ran;
static int hook_rc;
static void reset_before_watch(const char *pred) {
  if (hooked && strcmp(pred, hooked_pred) == 0) {
    hook_rc = proxyctl_cmd(hooked->px, "drop", NULL, 0, 5000);
    hooked = NULL;
    zkt_counter_add(&hook_ran, 1);
  }
}

static void test_waiter_replies_lost(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder a, b;
  zkl_lock *l;
  zkt_rec rec, rb;
  snapshot();
  zkt_name(name, sizeof name, "edges-waiter");
  zkt_rec_init(&rec);
  zkt_rec_init(&rb);
  zkt_proxied_open(&p, 5000);
  zkt_hold(&a, name);
  b.s = zkt_session(10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b.l, b.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(b.l, -1, zkt_on_acquired, &rb),
                        ZKL_OK);
  wait_children(name, 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  /* the watch on the predecessor (b) is lost with its reply */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_get_node_path(b.l, hooked_pred, sizeof hooked_pred), ZKL_OK);
  zkt_counter_init(&hook_ran);
  hooked = &p;
  zkl__hook_before_watch = reset_before_watch;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&hook_ran, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(hook_rc, 0);
  zkl__hook_before_watch = NULL;
  CU_ASSERT_EQUAL(zkl__debug_wait_suspended(p.s, 1, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  TAKEN(WATCHING, SUSPENDED);
  TAKEN(SUSPENDED, LISTING);
  /* its predecessor (b, not the lowest) goes: the listing that follows is
   * lost */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 8"), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b.l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rb, 1, ZKT_WAIT), ZKL_ECANCELED);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  TAKEN(LISTING, SUSPENDED);
  /* l now watches a, the lowest: a's release grants it */
  zkt_unhold(&a);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(b.l);
  zkt_assert_quiet(b.s);
  zkl_session_close(b.s, NULL);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* Cancelled while a listing is out: a waiter lists (its predecessor, not
 * the lowest, gave up) and the listing's reply is swallowed. */
static void test_cancel_while_listing(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder a, b;
  zkl_lock *l;
  zkt_rec rec, rb;
  snapshot();
  zkt_name(name, sizeof name, "edges-listing");
  zkt_rec_init(&rec);
  zkt_rec_init(&rb);
  zkt_proxied_open(&p, 6000);
  zkt_hold(&a, name);
  b.s = zkt_session(10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b.l, b.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(b.l, -1, zkt_on_acquired, &rb),
                        ZKL_OK);
  wait_children(name, 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(name, 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop-after-op 8"), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b.l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rb, 1, ZKT_WAIT), ZKL_ECANCELED);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  TAKEN(LISTING, ENDING);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  zkl_lock_free(l);
  zkl_lock_free(b.l);
  zkt_assert_quiet(b.s);
  zkl_session_close(b.s, NULL);
  zkt_unhold(&a);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* The server refuses a release (no DELETE on the parent any more): still
 * held; then the right is given back and the release goes through. */
static void test_release_refused(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  struct ACL_vector acl;
  struct ACL read_only = {0};
  snapshot();
  zkt_name(name, sizeof name, "edges-refused");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  read_only.perms = ZOO_PERM_READ | ZOO_PERM_ADMIN;
  read_only.id.scheme = "world";
  read_only.id.id = "anyone";
  acl.count = 1;
  acl.data = &read_only;
  CU_ASSERT_EQUAL(zoo_set_acl(zkt_observer(), parent, -1, &acl), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZNOAUTH);
  TAKEN(RELEASING, HELD);
  CU_ASSERT(zkl_lock_token(l) > 0);
  CU_ASSERT_EQUAL(zoo_set_acl(zkt_observer(), parent, -1,
                              &ZOO_OPEN_ACL_UNSAFE),
                  ZOK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* The two general abilities a multi-lock uses: its whole's nodes are one
 * per part, made by one transaction (CREATING -> PARTS), and it is granted
 * when every part holds (PARTS -> HELD); each part's attempt starts with
 * its node known (NEW -> LISTING), here waiting behind a holder. A whole
 * that times out while a part waits ends from PARTS. */
static void test_parts_together_and_adopted(void) {
  char a[64], b[64];
  const char *names[2] = {a, b};
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  zkt_holder h;
  zkt_rec rec;
  snapshot();
  zkt_name(a, sizeof a, "edges-multi-a");
  zkt_name(b, sizeof b, "edges-multi-b");
  zkt_rec_init(&rec);
  zkt_hold(&h, b);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&l, s, names, 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  wait_children(b, 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  TAKEN(NEW, CREATING);
  TAKEN(CREATING, PARTS);
  TAKEN(NEW, LISTING);
  TAKEN(LISTING, HELD);     /* the part of a */
  TAKEN(LISTING, WATCHING); /* the part of b */
  zkt_unhold(&h);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  TAKEN(WATCHING, HELD);
  TAKEN(PARTS, HELD);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  TAKEN(HELD, RELEASING);
  TAKEN(RELEASING, ENDED);
  /* timed out while the part of b waits behind a holder */
  snapshot();
  zkt_hold(&h, b);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 2000, NULL), ZKL_ETIMEDOUT);
  TAKEN(PARTS, ENDING);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(a);
  zkt_assert_parent_empty(b);
}

/* The transaction of a multi-lock goes through and its reply is lost: at
 * the reconnect its nodes are found, one per queue, and adopted
 * (RECOVERING -> PARTS). */
static void test_parts_recovered(void) {
  char a[64], b[64];
  const char *names[2] = {a, b};
  zkt_proxied p;
  zkl_lock *l;
  zkt_rec rec;
  snapshot();
  zkt_name(a, sizeof a, "edges-multi-lost-a");
  zkt_name(b, sizeof b, "edges-multi-lost-b");
  zkt_rec_init(&rec);
  zkt_proxied_open(&p, 5000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&l, p.s, names, 2), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK); /* parents */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 14"), 0); /* multi */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  TAKEN(CREATING, SUSPENDED);
  TAKEN(SUSPENDED, RECOVERING);
  TAKEN(RECOVERING, PARTS);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(a);
  zkt_assert_parent_empty(b);
}

/* A hold past its maximum: told, its node kept for its grace (STOPPING),
 * then let go by the holder's release. */
static void test_max_hold_stopping(void) {
  char name[64];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  zkt_rec lost;
  snapshot();
  zkt_name(name, sizeof name, "edges-stopping");
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold(l, 200), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_max_hold_grace(l, 120000), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_MAX_HOLD);
  TAKEN(HELD, STOPPING);
  wait_children(name, 1); /* kept */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  TAKEN(STOPPING, ENDED);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Last: every edge of the diagram was taken, and no other. */
static void test_every_edge(void) {
  int f, t, missing = 0;
  for (f = 0; f < ZKL_AS_COUNT; f++)
    for (t = 0; t < ZKL_AS_COUNT; t++) {
      if (!zkl__edge_allowed(f, t)) {
        CU_ASSERT_EQUAL(zkl__edge_count(f, t), 0);
      } else if (zkl__edge_count(f, t) == 0) {
        printf("\n    never taken: %s -> %s", zkl__state_name(f),
               zkl__state_name(t));
        missing++;
      }
    }
  CU_ASSERT_EQUAL(missing, 0);
  CU_ASSERT_EQUAL(zkl__edge_violations(), 0);
}

int main(void) {
  static const zkt_test tests[] = {
      {"plain paths", test_plain_paths},
      {"listing again, and cancel", test_relist_and_cancel},
      {"stale grants wait for a fresher lease", test_stale_grants},
      {"a semaphore's places are looked in", test_places_looked_in},
      {"the gate and the lease queue", test_gate_and_queue},
      {"started while disconnected", test_suspended_start},
      {"a lost create: recovery", test_recovery},
      {"a first try's lost create", test_first_try_recovered},
      {"a waiter's replies lost", test_waiter_replies_lost},
      {"cancelled while listing", test_cancel_while_listing},
      {"a release refused", test_release_refused},
      {"parts made together, adopted", test_parts_together_and_adopted},
      {"parts made together, recovered", test_parts_recovered},
      {"a hold past its maximum", test_max_hold_stopping},
      {"every edge of the diagram", test_every_edge},
      {NULL, NULL}};
  return zkt_main("engine", tests);
}
