/* SPDX-License-Identifier: Apache-2.0 */
/* test_events.c - what a lock is doing, visible: the session's event hook
 * tells each event exactly once per occurrence (queued, granted, released,
 * lost, timed out, canceled, failed, and the session's states), and
 * zkl_lock_get_stats() counts the same. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_SESSION 10000
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"

/* The last event of type, copied out (an empty one if none). */
static zkl_event last_of(zkt_events *lg, int type) {
  zkl_event e = {0};
  int i = zkt_events_last(lg, type);
  if (i >= 0)
    e = lg->ev[i];
  return e;
}

static void test_lock_events(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION), *other = zkt_session(T_SESSION);
  zkl_lock *l, *h;
  zkl_lock_stats st;
  zkt_rec rec;
  zkt_events lg;
  int64_t token = 0;
  zkt_events_init(&lg);
  zkt_rec_init(&rec);
  zkt_name(name, sizeof name, "events");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, zkt_on_event, &lg), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&h, other, name), ZKL_OK);
  /* granted, released */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, &token), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_GRANTED).token, token);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_RELEASED, name), 1);
  /* another holds: a try-once fails, a timed acquire queues and times
   * out, an async one queues and is canceled */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
  /* FAILED, QUEUED, TIMED_OUT, QUEUED, CANCELED */
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 7, ZKT_WAIT), 7);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_FAILED, name), 1);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_FAILED).reason, ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_QUEUED, name), 2);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_QUEUED).position, 1);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_TIMED_OUT, name), 1);
  CU_ASSERT(last_of(&lg, ZKL_EVENT_TIMED_OUT).wait_ms >= 300);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_CANCELED, name), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(h), ZKL_OK);
  /* lost: someone deletes the holder's node */
  {
    char path[512];
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
    CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZOK);
    CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 9, ZKT_WAIT), 9);
    CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_LOST, name), 1);
    CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_LOST).reason,
                    ZKL_LOST_NODE_DELETED);
    CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  }
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.acquires, 5);
  CU_ASSERT_EQUAL(st.grants, 2);
  CU_ASSERT_EQUAL(st.releases, 1);
  CU_ASSERT_EQUAL(st.losses, 1);
  CU_ASSERT_EQUAL(st.timeouts, 1);
  CU_ASSERT_EQUAL(st.cancels, 1);
  CU_ASSERT_EQUAL(st.failures, 1);
  CU_ASSERT(st.wait_max_ms >= 0 && st.wait_total_ms >= st.wait_max_ms);
  CU_ASSERT(st.hold_total_ms >= st.hold_max_ms);
  zkl_lock_free(l);
  zkl_lock_free(h);
  zkt_assert_quiet(s);
  /* exactly once each: nothing more came */
  CU_ASSERT_EQUAL(zkt_counter_get(&lg.count), 9);
  zkl_session_close(s, NULL);
  zkl_session_close(other, NULL);
  zkt_assert_parent_empty(name);
}

/* A semaphore's contender is queued at its gate, then among the leases:
 * both told as its own QUEUED; the gate's own grant and release are not
 * the user's and are not told. */
static void test_semaphore_events(void) {
  char name[64], gate[256], first[256];
  zkl_session *s = zkt_session(T_SESSION), *other = zkt_session(T_SESSION);
  zkl_lock *holder, *ahead, *l;
  zkt_rec r_ahead, r_l;
  zkl_event e;
  zkt_events lg;
  struct String_vector kids = {0, NULL};
  zkt_events_init(&lg);
  zkt_rec_init(&r_ahead);
  zkt_rec_init(&r_l);
  zkt_name(name, sizeof name, "events-sem");
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, zkt_on_event, &lg), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&holder, other, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&ahead, other, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l, s, name, 1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(holder, 0, NULL), ZKL_OK);
  /* `ahead` takes the gate and waits for the lease; l waits at the gate */
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(ahead, -1, zkt_on_acquired, &r_ahead), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zoo_get_children(zkt_observer(), gate, 0, &kids),
                        ZOK);
  CU_ASSERT_EQUAL_FATAL(kids.count, 1);
  snprintf(first, sizeof first, "%s", kids.data[0]);
  deallocate_String_vector(&kids);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &r_l),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 1, ZKT_WAIT), 1);
  e = last_of(&lg, ZKL_EVENT_QUEUED);
  CU_ASSERT_EQUAL(e.position, 1);
  CU_ASSERT_PTR_EQUAL(e.lock, l);
  CU_ASSERT_STRING_EQUAL(lg.waiting_for[0], first);
  CU_ASSERT_STRING_EQUAL(lg.name[0], name);
  /* the holder leaves: `ahead` holds and lets the gate go; l counts one
   * lease ahead and waits for the leases to change */
  CU_ASSERT_EQUAL(zkl_lock_release(holder), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&r_ahead, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_QUEUED, name), 2);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_QUEUED).position, 1);
  CU_ASSERT_STRING_EQUAL(lg.waiting_for[1], "");
  CU_ASSERT_EQUAL(zkl_lock_release(ahead), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&r_l, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  /* QUEUED (gate), QUEUED (leases), GRANTED, RELEASED: nothing else */
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 4, ZKT_WAIT), 4);
  zkl_lock_free(l);
  zkl_lock_free(ahead);
  zkl_lock_free(holder);
  zkt_assert_quiet(s);
  zkt_assert_quiet(other);
  CU_ASSERT_EQUAL(zkt_counter_get(&lg.count), 4);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_GRANTED, name), 1);
  CU_ASSERT_EQUAL(zkt_events_count(&lg, ZKL_EVENT_RELEASED, name), 1);
  zkl_session_close(s, NULL);
  zkl_session_close(other, NULL);
  {
    char sub[128];
    snprintf(sub, sizeof sub, "%s/leases", name);
    zkt_assert_parent_empty(sub);
    snprintf(sub, sizeof sub, "%s/locks", name);
    zkt_assert_parent_empty(sub);
  }
}

/* The session's states reach the hook too; with no hook, nothing. */
static void test_session_events(void) {
  char hosts[64];
  proxyctl *px;
  zkl_session *s;
  zkt_events lg;
  int port;
  zkt_events_init(&lg);
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  CU_ASSERT_EQUAL_FATAL(zkt_open(&s, hosts, 6000, 0, 0), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, zkt_on_event, &lg), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "refuse", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_SESSION).reason,
                  ZKL_STATE_SUSPENDED);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "accept", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lg.count, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(last_of(&lg, ZKL_EVENT_SESSION).reason,
                  ZKL_STATE_RECONNECTED);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, NULL, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(s, true, ZKT_WAIT), 0);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&lg.count), 2);
  CU_ASSERT_EQUAL(zkl_session_on_event(NULL, zkt_on_event, &lg), ZKL_EINVAL);
  proxyctl_stop(px);
}

int main(void) {
  static const zkt_test tests[] = {
      {"lock events and stats, once each", test_lock_events},
      {"a semaphore's contender, queued twice", test_semaphore_events},
      {"the session's states reach the event hook; with no hook, nothing", test_session_events},
      {NULL, NULL}};
  return zkt_main("events", tests);
}
