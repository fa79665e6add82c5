/* SPDX-License-Identifier: Apache-2.0 */
/* test_election.c - leader election against a real ZooKeeper: the first
 * candidate leads, successors take over in order with higher epochs,
 * resigning and losing are told, who leads can be asked and watched (one
 * watch, and queued candidates cause no call), Curator's LeaderLatch node
 * names and data, bad input, nothing left behind. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_SESSION 10000

typedef struct {
  zkl_session *s;
  zkl_lock *c;
} candidate;

static void stand(candidate *x, const char *name, const char *id) {
  x->s = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&x->c, x->s, name, id), ZKL_OK);
}

static void leave(candidate *x) {
  zkt_assert_quiet(x->s);
  zkl_lock_free(x->c);
  zkl_session_close(x->s, NULL);
}

static void test_first_leads(void) {
  char name[64], parent[512], id[64], path[512];
  candidate a, b;
  zkt_rec rb;
  int64_t ta = 0, token = 0;
  zkt_name(name, sizeof name, "elect-first");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&rb);
  stand(&a, name, "alpha");
  stand(&b, name, "beta");
  CU_ASSERT_EQUAL(zkl_name_get_leader(a.s, name, id, sizeof id, &token),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a.c, ZKT_WAIT, &ta), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(b.c, -1, zkt_on_acquired, &rb),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  /* LeaderLatch's layout: _c_<uuid>-latch-<seq>, the id as data */
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(a.c, path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-latch-"));
  {
    char data[64];
    int len = sizeof data;
    CU_ASSERT_EQUAL(zoo_get(zkt_observer(), path, 0, data, &len, NULL), ZOK);
    CU_ASSERT(len == 5 && memcmp(data, "alpha", 5) == 0);
  }
  CU_ASSERT_EQUAL(zkl_name_get_leader(b.s, name, id, sizeof id, &token), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(id, "alpha");
  CU_ASSERT_EQUAL(token, ta);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(b.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rb.calls), 0);
  /* alpha resigns: beta leads, with a higher epoch */
  CU_ASSERT_EQUAL(zkl_lock_release(a.c), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rb, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(rb.token > ta);
  CU_ASSERT_EQUAL(zkl_name_get_leader(a.s, name, id, sizeof id, &token), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(id, "beta");
  CU_ASSERT_EQUAL(token, rb.token);
  CU_ASSERT_EQUAL(zkl_lock_release(b.c), ZKL_OK);
  leave(&a);
  leave(&b);
  zkt_assert_parent_empty(name);
}

/* The watch of who leads: told the leader now, each change, and "nobody";
 * not told when a candidate queues behind the leader. */
typedef struct {
  zkt_counter calls;
  pthread_mutex_t mu;
  int rc;
  char id[64];
  int64_t token;
} seen;

static void on_leader(zkl_leader_watch *w, int rc, const char *id,
                      int64_t token, void *arg) {
  seen *x = arg;
  (void)w;
  pthread_mutex_lock(&x->mu);
  x->rc = rc;
  snprintf(x->id, sizeof x->id, "%s", id ? id : "");
  x->token = token;
  pthread_mutex_unlock(&x->mu);
  zkt_counter_add(&x->calls, 1);
}

/* Waits for call n; returns its rc and copies its id. */
static int seen_wait(seen *x, int n, char *id) {
  int rc;
  if (zkt_counter_wait(&x->calls, n, ZKT_WAIT) < n)
    return ZKT_NO_CALL;
  pthread_mutex_lock(&x->mu);
  rc = x->rc;
  strcpy(id, x->id);
  pthread_mutex_unlock(&x->mu);
  return rc;
}

static void test_leader_watch(void) {
  char name[64], parent[512], id[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_leader_watch *w;
  candidate a, b, c;
  seen x;
  zkl_debug_counts d;
  memset(&x, 0, sizeof x);
  zkt_counter_init(&x.calls);
  pthread_mutex_init(&x.mu, NULL);
  zkt_name(name, sizeof name, "elect-watch");
  zkt_parent(parent, sizeof parent, name);
  /* no election yet: nobody leads */
  CU_ASSERT_EQUAL_FATAL(zkl_leader_watch_new(&w, s, name, on_leader, &x),
                        ZKL_OK);
  CU_ASSERT_EQUAL(seen_wait(&x, 1, id), ZKL_ENOTHELD);
  stand(&a, name, "alpha");
  CU_ASSERT_EQUAL(zkl_lock_acquire(a.c, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(seen_wait(&x, 2, id), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(id, "alpha");
  /* beta and gamma queue behind: no call, and one watch only */
  stand(&b, name, "beta");
  stand(&c, name, "gamma");
  {
    zkt_rec rb, rc2;
    zkt_rec_init(&rb);
    zkt_rec_init(&rc2);
    /* beta's node first, then gamma's: the queue's order is the order
     * the nodes were made in, not the order the calls were made in */
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(b.c, -1, zkt_on_acquired, &rb), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(c.c, -1, zkt_on_acquired, &rc2), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, ZKT_WAIT), 3);
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
    CU_ASSERT_EQUAL(zkt_counter_get(&x.calls), 2);
    zkl__debug_counts(s, &d);
    CU_ASSERT_EQUAL(d.watches, 1);
    /* alpha resigns: beta */
    CU_ASSERT_EQUAL(zkl_lock_release(a.c), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_rec_wait(&rb, 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT_EQUAL(seen_wait(&x, 3, id), ZKL_OK);
    CU_ASSERT_STRING_EQUAL(id, "beta");
    CU_ASSERT_EQUAL(x.token, rb.token);
    /* beta's session ends: gamma */
    zkl_lock_free(b.c);
    zkl_session_close(b.s, NULL);
    CU_ASSERT_EQUAL(zkt_rec_wait(&rc2, 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT_EQUAL(seen_wait(&x, 4, id), ZKL_OK);
    CU_ASSERT_STRING_EQUAL(id, "gamma");
    /* gamma resigns: nobody */
    CU_ASSERT_EQUAL(zkl_lock_release(c.c), ZKL_OK);
    CU_ASSERT_EQUAL(seen_wait(&x, 5, id), ZKL_ENOTHELD);
  }
  /* someone stands again: told */
  CU_ASSERT_EQUAL(zkl_lock_acquire(a.c, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(seen_wait(&x, 6, id), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(id, "alpha");
  CU_ASSERT_EQUAL(zkl_lock_release(a.c), ZKL_OK);
  CU_ASSERT_EQUAL(seen_wait(&x, 7, id), ZKL_ENOTHELD);
  zkl_leader_watch_free(w);
  zkt_assert_quiet(s);
  CU_ASSERT_EQUAL(zkt_counter_get(&x.calls), 7);
  zkl_session_close(s, NULL);
  leave(&a);
  leave(&c);
  zkt_assert_parent_empty(name);
}

/* A leader whose session expires is told it lost, and the next leads. */
static zkt_counter lost_calls;
static int lost_reason;
static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  (void)l;
  (void)arg;
  lost_reason = reason;
  zkt_counter_add(&lost_calls, 1);
}

static void test_leader_expires(void) {
  char name[64];
  candidate a, b;
  zkt_rec rb;
  int64_t ta = 0;
  zkt_name(name, sizeof name, "elect-expire");
  zkt_counter_init(&lost_calls);
  zkt_rec_init(&rb);
  stand(&a, name, "alpha");
  stand(&b, name, "beta");
  zkl_lock_on_lost(a.c, on_lost, NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a.c, ZKT_WAIT, &ta), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(b.c, -1, zkt_on_acquired, &rb),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_expire(a.s), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lost_calls, 1, ZKT_WAIT), 1);
  CU_ASSERT(lost_reason == ZKL_LOST_SESSION_EXPIRED ||
            lost_reason == ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rb, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(rb.token > ta);
  CU_ASSERT_EQUAL(zkl_lock_release(b.c), ZKL_OK);
  zkl_lock_free(a.c);
  zkl_session_close(a.s, NULL);
  leave(&b);
  zkt_assert_parent_empty(name);
}

/* Never two leaders that both believe it: a leader cut off from ZooKeeper
 * (through the fault proxy, which drops every byte) is told it stopped
 * leading strictly before the next candidate is told it leads, trial after
 * trial, and each leader's epoch is higher than the one before. */
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define TRIALS 5

typedef struct {
  zkt_counter calls;
  int value;
  int64_t at_ms;
  int64_t token;
} stamp;

static void stamp_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  stamp *x = arg;
  (void)l;
  x->at_ms = zkt_now_ms();
  x->value = reason;
  zkt_counter_add(&x->calls, 1);
}

static void stamp_granted(zkl_lock *l, int rc, int64_t token, void *arg) {
  stamp *x = arg;
  (void)l;
  x->at_ms = zkt_now_ms();
  x->value = rc;
  x->token = token;
  zkt_counter_add(&x->calls, 1);
}

static void test_partitioned_leader(void) {
  int trial;
  int64_t last_epoch = 0;
  printf("\n");
  for (trial = 0; trial < TRIALS; trial++) {
    char name[64], hosts[64], parent[512];
    proxyctl *px;
    zkl_session *ls, *fs;
    zkl_lock *leader, *follower;
    stamp lost, led, next;
    int64_t epoch = 0, drop_at;
    int port;
    memset(&lost, 0, sizeof lost);
    memset(&next, 0, sizeof next);
    memset(&led, 0, sizeof led);
    zkt_counter_init(&lost.calls);
    zkt_counter_init(&next.calls);
    zkt_name(name, sizeof name, "elect-partition");
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
    CU_ASSERT_EQUAL_FATAL(zkt_open(&ls, hosts, 3000, 0, 0), ZKL_OK);
    fs = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&leader, ls, name, "cut-off"),
                          ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&follower, fs, name, "next"),
                          ZKL_OK);
    zkl_lock_on_lost(leader, stamp_lost, &lost);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(leader, ZKT_WAIT, &epoch), ZKL_OK);
    CU_ASSERT(epoch > last_epoch);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(follower, -1, stamp_granted, &next), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
    drop_at = zkt_now_ms();
    CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
    CU_ASSERT_EQUAL(zkt_counter_wait(&next.calls, 1, ZKT_WAIT), 1);
    CU_ASSERT_EQUAL(next.value, ZKL_OK);
    CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 1);
    CU_ASSERT_EQUAL(lost.value, ZKL_LOST_LEASE_EXPIRED);
    CU_ASSERT(lost.at_ms < next.at_ms); /* strictly before */
    CU_ASSERT(next.token > epoch);
    printf("    trial %d: leader told at %lld ms, next leader at %lld ms "
           "after the drop\n",
           trial, (long long)(lost.at_ms - drop_at),
           (long long)(next.at_ms - drop_at));
    CU_ASSERT_EQUAL(zkl_lock_token(leader), 0);
    last_epoch = next.token;
    CU_ASSERT_EQUAL(zkl_lock_release(follower), ZKL_OK);
    zkl_lock_free(leader);
    zkl_lock_free(follower);
    zkl_session_close(ls, NULL);
    zkl_session_close(fs, NULL);
    proxyctl_stop(px);
    zkt_assert_parent_empty(name);
  }
}

static void test_bad_input(void) {
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *c = NULL;
  zkl_leader_watch *w = NULL;
  char big[ZKL_ID_MAX + 2];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CU_ASSERT_EQUAL(zkl_lock_new_election(&c, s, "x", ""), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_election(&c, s, "x", NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_election(&c, s, "x", big), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_election(&c, s, "a//b", "id"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_election(&c, NULL, "x", "id"), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(c);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s, "", NULL, 0, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_leader_watch_new(&w, s, "x", NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(w);
  zkl_leader_watch_free(NULL);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
}

int main(void) {
  static const zkt_test tests[] = {
      {"the first candidate leads", test_first_leads},
      {"who leads, watched", test_leader_watch},
      {"a leader's session expires", test_leader_expires},
      {"a partitioned leader is told first", test_partitioned_leader},
      {"an empty or too long id, or a bad name, is refused with ZKL_EINVAL",
       test_bad_input},
      {NULL, NULL}};
  return zkt_main("election", tests);
}
