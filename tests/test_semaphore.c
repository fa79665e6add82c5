/* SPDX-License-Identifier: Apache-2.0 */
/* test_semaphore.c - semaphores against a real ZooKeeper: at most N leases
 * (checked by the holders themselves, from many sessions), Curator's
 * layout, waiters queued on the gate with no herd on the leases, a
 * disagreement on N, timeouts, cancels and frees leaving nothing behind. */
#include "config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_SESSION 10000
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"

typedef struct {
  zkl_session *s;
  zkl_lock *l;
} holder;

static void open_one(holder *h, const char *name, int limit) {
  h->s = zkt_session(T_SESSION);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&h->l, h->s, name, limit),
                        ZKL_OK);
}

static void close_one(holder *h) {
  zkt_assert_quiet(h->s);
  zkl_lock_free(h->l);
  zkl_session_close(h->s, NULL);
}

/* /locks/NAME/leases: the semaphore's leases, as Curator lays them out. */
static void leases_path(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "/locks/%s/leases", name);
}

static void assert_nothing_left(const char *name) {
  char sub[128];
  snprintf(sub, sizeof sub, "%s/leases", name);
  zkt_assert_parent_empty(sub);
  snprintf(sub, sizeof sub, "%s/locks", name);
  zkt_assert_parent_empty(sub);
}

static void test_limit(void) {
  char name[64], leases[256], path[512];
  holder h[3];
  zkt_rec rec;
  int i;
  zkt_name(name, sizeof name, "sem-limit");
  leases_path(leases, sizeof leases, name);
  zkt_rec_init(&rec);
  for (i = 0; i < 3; i++)
    open_one(&h[i], name, 2);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h[1].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_children(leases), 2);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h[0].l, path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "/leases/_c_"));
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-lease-"));
  /* the third cannot have one now */
  CU_ASSERT_EQUAL(zkl_lock_acquire(h[2].l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h[2].l, 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkt_children(leases), 2);
  /* ... and gets one when one is given back */
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(h[2].l, -1, zkt_on_acquired, &rec), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[2].s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h[0].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(rec.token > 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h[1].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(h[2].l), ZKL_OK);
  for (i = 0; i < 3; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

/* zkl_lock_get_node_paths lists a semaphore's nodes as it has them: the
 * lease node, then the gate node. The holder (its gate given back) has its
 * lease node only; the next, at the gate's head, has both while it waits
 * for a lease; the last, queued at the gate, has its gate node only, and
 * zkl_lock_get_node_path, which names the node that holds, says none. */
static void test_node_paths_gate_and_lease(void) {
  char name[64], leases[256], gate[256], path[512], paths[2 * ZKL_PATH_MAX];
  char *space;
  holder h[3];
  zkt_rec rec[2];
  int i;
  zkt_name(name, sizeof name, "sem-paths");
  snprintf(leases, sizeof leases, "/locks/%s/leases/", name);
  snprintf(gate, sizeof gate, "/locks/%s/locks/", name);
  for (i = 0; i < 3; i++)
    open_one(&h[i], name, 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[0].s, ZKT_WAIT), 0);
  for (i = 1; i < 3; i++) {
    zkt_rec_init(&rec[i - 1]);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(h[i].l, -1, zkt_on_acquired, &rec[i - 1]),
        ZKL_OK);
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[i].s, ZKT_WAIT), 0);
  }
  /* the holder: its lease node */
  CU_ASSERT_EQUAL(zkl_lock_get_node_paths(h[0].l, paths, sizeof paths), ZKL_OK);
  CU_ASSERT(strncmp(paths, leases, strlen(leases)) == 0);
  CU_ASSERT_PTR_NULL(strchr(paths, ' '));
  /* the gate's holder: lease node, then gate node */
  CU_ASSERT_EQUAL(zkl_lock_get_node_paths(h[1].l, paths, sizeof paths), ZKL_OK);
  space = strchr(paths, ' ');
  CU_ASSERT_PTR_NOT_NULL_FATAL(space);
  CU_ASSERT(strncmp(paths, leases, strlen(leases)) == 0);
  CU_ASSERT(strncmp(space + 1, gate, strlen(gate)) == 0);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h[1].l, path, sizeof path), ZKL_OK);
  CU_ASSERT(strncmp(path, paths, (size_t)(space - paths)) == 0);
  /* queued at the gate: its gate node only */
  CU_ASSERT_EQUAL(zkl_lock_get_node_paths(h[2].l, paths, sizeof paths), ZKL_OK);
  CU_ASSERT(strncmp(paths, gate, strlen(gate)) == 0);
  CU_ASSERT_PTR_NULL(strchr(paths, ' '));
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h[2].l, path, sizeof path),
                  ZKL_ENOTHELD);
  /* too short for both: refused, not cut */
  CU_ASSERT_EQUAL(
      zkl_lock_get_node_paths(h[1].l, paths, (size_t)(space - paths) + 2),
      ZKL_EINVAL);
  for (i = 0; i < 3; i++) {
    if (i > 0)
      CU_ASSERT_EQUAL(zkt_rec_wait(&rec[i - 1], 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_release(h[i].l), ZKL_OK);
  }
  for (i = 0; i < 3; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

static zkt_counter any_granted;

static void on_granted(zkl_lock *l, int rc, int64_t token, void *arg) {
  zkt_on_acquired(l, rc, token, arg);
  zkt_counter_add(&any_granted, 1);
}

/* Only the contender holding the gate watches the leases: the others wait
 * on the gate, one watch each, and none of them lists the leases. */
static void test_no_herd(void) {
  char name[64], gate[256];
  holder h[4];
  zkt_rec rec[4];
  zkl_debug_counts c;
  int i, watching = 0;
  zkt_name(name, sizeof name, "sem-herd");
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  zkt_counter_init(&any_granted);
  open_one(&h[0], name, 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  for (i = 1; i < 4; i++) {
    zkt_rec_init(&rec[i]);
    open_one(&h[i], name, 1);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(h[i].l, -1, on_granted, &rec[i]), ZKL_OK);
  }
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 3, ZKT_WAIT), 3);
  for (i = 1; i < 4; i++) {
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[i].s, ZKT_WAIT), 0);
    zkl__debug_counts(h[i].s, &c);
    watching += c.sent[ZKL_RQ_CHILD_WATCH] > 0;
  }
  CU_ASSERT_EQUAL(watching, 1); /* the gate's holder alone */
  /* Hand the lease on: the waiters get it one at a time, in the order
   * they queued at the gate (not the order they were started in). */
  CU_ASSERT_EQUAL(zkl_lock_release(h[0].l), ZKL_OK);
  {
    bool released[4] = {true, false, false, false};
    int k;
    for (k = 1; k < 4; k++) {
      int next = -1;
      CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&any_granted, k, ZKT_WAIT), k);
      for (i = 1; i < 4; i++) {
        if (released[i] || zkt_counter_get(&rec[i].calls) == 0)
          continue;
        CU_ASSERT(next < 0); /* one lease at a time */
        next = i;
      }
      CU_ASSERT_FATAL(next > 0);
      CU_ASSERT_EQUAL(zkt_rec_wait(&rec[next], 1, 0), ZKL_OK);
      CU_ASSERT_EQUAL(zkl_lock_release(h[next].l), ZKL_OK);
      released[next] = true;
    }
  }
  for (i = 0; i < 4; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

/* At most N holders at once, as the holders themselves see it: many
 * sessions, each taking and giving back leases, count who is inside. */
#define HOLDERS 6
#define LIMIT 3
#define ROUNDS 15
static atomic_int inside, most_inside;
static atomic_int failures;

typedef struct {
  const char *name;
  int rounds;
} worker_arg;

static pthread_mutex_t full_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t full_cond = PTHREAD_COND_INITIALIZER;

/* A holder stays inside until the semaphore is full, or for a moment at
 * most: so that full occupancy is reached, and an excess would show. */
static void stay_inside(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&full_mu);
  pthread_cond_broadcast(&full_cond);
  while (atomic_load(&inside) < LIMIT)
    if (pthread_cond_timedwait(&full_cond, &full_mu, &ts) != 0)
      break;
  pthread_mutex_unlock(&full_mu);
}

static void *worker(void *p) {
  worker_arg *a = p;
  zkl_session *s = NULL;
  zkl_lock *l = NULL;
  int i;
  if (zkt_open(&s, zkt_hosts(), T_SESSION, 0, 0) != ZKL_OK ||
      zkl_lock_new_semaphore(&l, s, a->name, LIMIT) != ZKL_OK) {
    atomic_fetch_add(&failures, 1);
    zkl_session_close(s, NULL);
    return NULL;
  }
  for (i = 0; i < a->rounds; i++) {
    int now, most;
    if (zkl_lock_acquire(l, ZKT_WAIT, NULL) != ZKL_OK) {
      atomic_fetch_add(&failures, 1);
      continue;
    }
    now = atomic_fetch_add(&inside, 1) + 1;
    most = atomic_load(&most_inside);
    while (now > most &&
           !atomic_compare_exchange_weak(&most_inside, &most, now))
      ;
    stay_inside();
    atomic_fetch_sub(&inside, 1);
    if (zkl_lock_release(l) != ZKL_OK)
      atomic_fetch_add(&failures, 1);
  }
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  return NULL;
}

static void test_at_most_n(void) {
  char name[64];
  pthread_t t[HOLDERS];
  worker_arg a;
  int i;
  zkt_name(name, sizeof name, "sem-most");
  a.name = name;
  a.rounds = ROUNDS;
  atomic_store(&inside, 0);
  atomic_store(&most_inside, 0);
  atomic_store(&failures, 0);
  for (i = 0; i < HOLDERS; i++)
    CU_ASSERT_FATAL(pthread_create(&t[i], NULL, worker, &a) == 0);
  for (i = 0; i < HOLDERS; i++)
    pthread_join(t[i], NULL);
  CU_ASSERT_EQUAL(atomic_load(&failures), 0);
  CU_ASSERT(atomic_load(&most_inside) <= LIMIT);
  CU_ASSERT(atomic_load(&most_inside) >= 2); /* it did admit several */
  printf("(most at once: %d of %d) ", atomic_load(&most_inside), LIMIT);
  assert_nothing_left(name);
}

/* A lease node made by hand as Curator makes it (no limit in its name or
 * data; "-try-lease-" for one of ours made without the gate by an older
 * libzklock, whose name said no limit either): its path, in out. */
static void curator_lease(const char *leases, const char *marker, char *out,
                          size_t len) {
  char path[512];
  int rc = zoo_create(zkt_observer(), leases, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_CONTAINER, NULL, 0);
  CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
  snprintf(path, sizeof path, "%s/_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-%s",
           leases, marker);
  CU_ASSERT_EQUAL_FATAL(zoo_create(zkt_observer(), path, NULL, -1,
                                   &ZOO_OPEN_ACL_UNSAFE,
                                   ZOO_EPHEMERAL_SEQUENTIAL, out, (int)len),
                        ZOK);
}

/* Contenders of ours that disagree on N: their lease nodes say their N in
 * their names, and one that finds a node ahead with another N is refused
 * at once with ZKL_ELIMIT, waiting or trying once, whether the nodes came
 * through the gate or not, and leaves nothing behind; the holders hold on.
 * When they are gone, the name is free for any N. */
static void test_disagreeing_limits(void) {
  char name[64], leases[256], path[512];
  holder big[2], small;
  zkl_participant *list;
  int i, count = 0;
  zkt_name(name, sizeof name, "sem-disagree");
  leases_path(leases, sizeof leases, name);
  for (i = 0; i < 2; i++) {
    open_one(&big[i], name, 3);
    /* big[0] through the gate, big[1] by its first try */
    __atomic_store_n(&zkl__test_no_first_try, i == 0, __ATOMIC_RELAXED);
    CU_ASSERT_EQUAL(zkl_lock_acquire(big[i].l, ZKT_WAIT, NULL), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(big[i].l, path, sizeof path),
                    ZKL_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(path, "-limit3-"));
  }
  __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
  open_one(&small, name, 1);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, ZKT_WAIT, NULL), ZKL_ELIMIT);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_ELIMIT);
  zkl_lock_free(small.l);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&small.l, small.s, name, 4),
                        ZKL_OK);
  /* more leases would be free for it: refused all the same */
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_ELIMIT);
  __atomic_store_n(&zkl__test_no_first_try, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, ZKT_WAIT, NULL), ZKL_ELIMIT);
  __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl__debug_wait_quiet(small.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_children(leases), 2); /* its node is gone */
  /* the holders hold on, and say their limit */
  for (i = 0; i < 2; i++)
    CU_ASSERT(zkl_lock_token(big[i].l) > 0);
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(small.s, name, &list, &count), ZKL_OK);
  CU_ASSERT_EQUAL(count, 2);
  for (i = 0; i < count; i++) {
    CU_ASSERT(list[i].holds);
    CU_ASSERT_EQUAL(list[i].limit, 3);
  }
  zkl_name_list_free(list);
  /* the same limit is welcome */
  zkl_lock_free(small.l);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&small.l, small.s, name, 3),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(small.l), ZKL_OK);
  /* nobody left: any limit */
  for (i = 0; i < 2; i++)
    CU_ASSERT_EQUAL(zkl_lock_release(big[i].l), ZKL_OK);
  zkl_lock_free(small.l);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&small.l, small.s, name, 1),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(small.l), ZKL_OK);
  close_one(&small);
  for (i = 0; i < 2; i++)
    close_one(&big[i]);
  assert_nothing_left(name);
}

/* Lease nodes that say no limit (Curator's; an older libzklock's): counted,
 * never compared. One that finds more such leases held than its own limit
 * waits on, and says so when its wait ends, if nodes that came through the
 * gate show it. A try-once's lease (taken without the gate) cannot be told
 * from a try-once passing through: an excess that only such a lease makes
 * ends as a plain timeout. */
static void test_unstated_limits(void) {
  char name[64], leases[256], held[2][512];
  holder small;
  zkl_participant *list;
  int i, count = 0;
  zkt_name(name, sizeof name, "sem-unstated");
  leases_path(leases, sizeof leases, name);
  open_one(&small, name, 1);
  /* a lease to make the parents, given back */
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(small.l), ZKL_OK);
  for (i = 0; i < 2; i++)
    curator_lease(leases, "lease-", held[i], sizeof held[i]);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 500, NULL), ZKL_ELIMIT);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(small.s, name, &list, &count), ZKL_OK);
  CU_ASSERT_EQUAL(count, 2);
  for (i = 0; i < count; i++)
    CU_ASSERT_EQUAL(list[i].limit, 0);
  zkl_name_list_free(list);
  /* one of them a try-once's: the excess is no longer certain */
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), held[1], -1), ZOK);
  curator_lease(leases, "try-lease-", held[1], sizeof held[1]);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 500, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), held[0], -1), ZOK);
  /* one held, limit 1: an honest wait now, then a lease */
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), held[1], -1), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(small.l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(small.l), ZKL_OK);
  close_one(&small);
  assert_nothing_left(name);
}

/* A contender freed or cancelled in either phase (waiting for the gate,
 * or holding it and waiting for a lease) leaves no node behind. */
static void test_cancel_and_free(void) {
  char name[64], gate[256], leases[256];
  holder h[3];
  zkt_rec r1, r2;
  int i;
  zkt_name(name, sizeof name, "sem-cancel");
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  leases_path(leases, sizeof leases, name);
  zkt_rec_init(&r1);
  zkt_rec_init(&r2);
  for (i = 0; i < 3; i++)
    open_one(&h[i], name, 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  /* h1 holds the gate and waits for a lease; h2 waits for the gate */
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(h[1].l, -1, zkt_on_acquired, &r1), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(h[2].l, -1, zkt_on_acquired, &r2), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 2, ZKT_WAIT), 2);
  /* h1's lease node, made behind the gate (its first try's went first) */
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[1].s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(h[1].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&r1, 1, ZKT_WAIT), ZKL_ECANCELED);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2); /* h2 now */
  zkl_lock_free(h[2].l);
  h[2].l = NULL;
  CU_ASSERT_EQUAL(zkt_rec_wait(&r2, 1, ZKT_WAIT), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 0, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(h[0].l), ZKL_OK);
  for (i = 0; i < 3; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

/* Leases taken and given back quickly by one contender: the gate of the
 * previous lease may still be on its way out when the next asks for it. */
static void test_quick_succession(void) {
  char name[64];
  holder h;
  int64_t last = 0, token;
  int i;
  zkt_name(name, sizeof name, "sem-quick");
  open_one(&h, name, 2);
  for (i = 0; i < 30; i++) {
    zkt_rec rec;
    zkt_rec_init(&rec);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(h.l, ZKT_WAIT, zkt_on_acquired, &rec), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
    token = rec.token;
    CU_ASSERT(token > last);
    last = token;
    CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  }
  close_one(&h);
  assert_nothing_left(name);
}

/* The lease rule counts the lease nodes ahead of the contender's own, not
 * every node: a node behind it (a try-once passing through without the
 * gate) neither holds it up nor makes it say ZKL_ELIMIT. */
static const zkl_nodes lease_nodes = {ZKL_PLACE_LEASES, ZKL_FAMILIES_ALL};
static zkl_verdict lease_verdict(char **names, int n, const char *own,
                                 int limit) {
  zkl_queue q;
  zkl_verdict v;
  char prefix[64];
  snprintf(prefix, sizeof prefix, "%.*s", (int)(strstr(own, "lease-") - own),
           own);
  strcat(prefix, "lease-");
  CU_ASSERT_EQUAL_FATAL(
      zkl__queue_build(names, n, &lease_nodes, own, prefix, &q), ZKL_OK);
  zkl__recipe_lease.decide_locked(&q, (const void *)(intptr_t)limit, &v);
  zkl__queue_free(&q);
  return v;
}

static void test_lease_rule(void) {
  char *names[] = {"_c_d-lease-0000000004", "_c_a-lease-0000000001",
                   "_c_c-lease-0000000003", "_c_b-lease-0000000002"};
  /* b a try-once's node (made without the gate) */
  char *with_try[] = {"_c_d-lease-0000000004", "_c_a-lease-0000000001",
                      "_c_c-lease-0000000003", "_c_b-try-lease-0000000002"};
  zkl_verdict v;
  /* three ahead, one a try-once's, limit 2: it waits (the try-once's node
   * may be a held lease), but only two surely are: no ZKL_ELIMIT */
  v = lease_verdict(with_try, 4, "_c_d-lease-0000000004", 2);
  CU_ASSERT_EQUAL(v.kind, ZKL_WAIT_CHILDREN);
  CU_ASSERT_EQUAL(v.code, 0);
  /* ... limit 1: two that came through the gate are more than 1 */
  v = lease_verdict(with_try, 4, "_c_d-lease-0000000004", 1);
  CU_ASSERT_EQUAL(v.kind, ZKL_WAIT_CHILDREN);
  CU_ASSERT_EQUAL(v.code, ZKL_ELIMIT);
  /* a try-once's own node counts what is ahead of it like any other */
  v = lease_verdict(with_try, 4, "_c_b-try-lease-0000000002", 2);
  CU_ASSERT_EQUAL(v.kind, ZKL_GRANT);
  /* two ahead, one behind, limit 2: waits, and no one admits more */
  v = lease_verdict(names, 4, "_c_c-lease-0000000003", 2);
  CU_ASSERT_EQUAL(v.kind, ZKL_WAIT_CHILDREN);
  CU_ASSERT_EQUAL(v.code, 0);
  /* one ahead, two behind, limit 2: granted */
  v = lease_verdict(names, 4, "_c_b-lease-0000000002", 2);
  CU_ASSERT_EQUAL(v.kind, ZKL_GRANT);
  /* three ahead, limit 2: someone admits more than we do */
  v = lease_verdict(names, 4, "_c_d-lease-0000000004", 2);
  CU_ASSERT_EQUAL(v.kind, ZKL_WAIT_CHILDREN);
  CU_ASSERT_EQUAL(v.code, ZKL_ELIMIT);
  /* the lowest always goes */
  v = lease_verdict(names, 4, "_c_a-lease-0000000001", 1);
  CU_ASSERT_EQUAL(v.kind, ZKL_GRANT);
  {
    /* names that say their limit (ours): one ahead that says another is a
     * refusal, whatever the count; one behind is not (it yields); one
     * that says the same counts as any */
    char *said[] = {"_c_00112233445566aa-limit2-lease-0000000001",
                    "_c_11112233445566aa-limit2-try-lease-0000000002",
                    "_c_22112233445566aa-limit3-lease-0000000003",
                    "_c_d-lease-0000000004"};
    v = lease_verdict(said, 4, said[2], 3);
    CU_ASSERT_EQUAL(v.kind, ZKL_REFUSE);
    CU_ASSERT_EQUAL(v.code, ZKL_ELIMIT);
    v = lease_verdict(said, 4, said[1], 2);
    CU_ASSERT_EQUAL(v.kind, ZKL_GRANT);
    v = lease_verdict(said, 4, said[1], 5);
    CU_ASSERT_EQUAL(v.kind, ZKL_REFUSE);
    /* a node that says nothing (Curator's) ahead of one that says 2 */
    v = lease_verdict(said, 4, said[3], 2);
    CU_ASSERT_EQUAL(v.kind, ZKL_REFUSE); /* limit3 is ahead of it */
    v = lease_verdict(said, 2, said[1], 2);
    CU_ASSERT_EQUAL(v.kind, ZKL_GRANT);
    CU_ASSERT_EQUAL(zkl__node_limit(said[2]), 3);
    CU_ASSERT_EQUAL(zkl__node_limit(said[1]), 2);
    CU_ASSERT_EQUAL(zkl__node_limit(said[3]), 0);
    CU_ASSERT_EQUAL(
        zkl__node_limit("_c_00112233445566aa-limit-lease-0000000001"), 0);
    CU_ASSERT_EQUAL(
        zkl__node_limit("_c_00112233445566aa-limit0-lease-0000000001"), 0);
    CU_ASSERT_EQUAL(
        zkl__node_limit(
            "_c_00112233445566aa-limit99999999999-lease-0000000001"),
        0);
  }
}

/* Try-onces while another contender counts at the gate (the leases all
 * held): they skip the gate, make their lease node behind the counting
 * one's, see too many and delete it. The counting contender looks again
 * when the leases change (at most twice a try: the node made, the node
 * gone), never counts a try-once's node, and its wait ends as a plain
 * timeout, not ZKL_ELIMIT. */
static void test_try_once_beside_counting(void) {
  char name[64], leases[256];
  holder h[4];
  zkt_rec rec;
  zkl_debug_counts before, after;
  int i;
  zkt_name(name, sizeof name, "sem-try");
  leases_path(leases, sizeof leases, name);
  zkt_rec_init(&rec);
  for (i = 0; i < 4; i++)
    open_one(&h[i], name, 2);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[1].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(h[2].l, 1500, zkt_on_acquired, &rec), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 3, ZKT_WAIT), 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[2].s, ZKT_WAIT), 0);
  zkl__debug_counts(h[2].s, &before);
  for (i = 0; i < 5; i++)
    CU_ASSERT_EQUAL(zkl_lock_acquire(h[3].l, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkt_children(leases), 3);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[3].s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h[2].s, ZKT_WAIT), 0);
  zkl__debug_counts(h[2].s, &after);
  CU_ASSERT(after.sent[ZKL_RQ_LIST] + after.sent[ZKL_RQ_CHILD_WATCH] -
                before.sent[ZKL_RQ_LIST] - before.sent[ZKL_RQ_CHILD_WATCH] <=
            2 * 5);
  /* the counting contender's wait ends as a plain timeout */
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2);
  /* a lease given back: the try-once has it */
  CU_ASSERT_EQUAL(zkl_lock_release(h[0].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h[3].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(h[3].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(h[1].l), ZKL_OK);
  for (i = 0; i < 4; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

/* A try-once's lease node that stays for longer than the try: its
 * connection is cut right after its create reached the server, so the
 * node stands until that session reconnects. A contender that counts the
 * leases meanwhile (limit 1: one held, and the try-once's node, both ahead
 * of its own) cannot know the try-once's node is not a held lease: it
 * waits, and when its time runs out it says ZKL_ETIMEDOUT, not ZKL_ELIMIT,
 * since nothing shows that the contenders disagree (the try-once's node
 * says what it is in its name; Curator still counts it, as every node of
 * leases/). Then the try-once fails with ZKL_ECONNECT, and its node goes
 * at the reconnect. */
static void test_try_once_node_stays(void) {
  char name[64], leases[256], hosts[64], path[512];
  holder h, w, t;
  proxyctl *px;
  zkt_rec rec;
  int port;
  struct String_vector kids = {0, NULL};
  int i, tried = 0;
  zkt_name(name, sizeof name, "sem-stays");
  leases_path(leases, sizeof leases, name);
  zkt_rec_init(&rec);
  open_one(&h, name, 1);
  open_one(&w, name, 1);
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  CU_ASSERT_EQUAL_FATAL(zkt_open(&t.s, hosts, T_SESSION, 0, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&t.l, t.s, name, 1), ZKL_OK);
  /* h comes through the gate (a try-once or a first try would not) */
  __atomic_store_n(&zkl__test_no_first_try, 1, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h.l, ZKT_WAIT, NULL), ZKL_OK);
  __atomic_store_n(&zkl__test_no_first_try, 0, __ATOMIC_RELAXED);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h.l, path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NULL(strstr(path, "-try-lease-"));
  /* 15: create2, the try-once's first request; its answer is lost */
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop-after-op 15", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(t.l, 0, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(px, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2);
  /* the try-once's node says what it is; it still ends in lease-<seq> */
  CU_ASSERT_EQUAL(zoo_get_children(zkt_observer(), leases, 0, &kids), ZOK);
  for (i = 0; i < kids.count; i++) {
    CU_ASSERT_PTR_NOT_NULL(strstr(kids.data[i], "-lease-"));
    tried += strstr(kids.data[i], "-try-lease-") != NULL;
  }
  deallocate_String_vector(&kids);
  CU_ASSERT_EQUAL(tried, 1);
  CU_ASSERT_EQUAL(zkl_lock_acquire(w.l, 500, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkt_children(leases), 2); /* it stood all along */
  /* healed: the pair that lost the answer is reset, the try-once fails,
   * and its node goes when its session reconnects */
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "pass", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECONNECT);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  close_one(&h);
  close_one(&w);
  close_one(&t);
  proxyctl_stop(px);
  assert_nothing_left(name);
}

/* The first try skips the gate: while the leases are free and nobody is
 * at the gate it holds at once, in one round trip of five requests and no
 * gate node; with a contender at the gate (who came first), it gives way:
 * its lease node goes, and it queues at the gate. A disagreement among
 * holders that took their leases this way ends as a plain timeout: their
 * nodes say they came without the gate, and prove nothing. */
static void test_first_try(void) {
  char name[64], leases[256], gate[256], path[512], other[512];
  holder h, h2, w;
  zkt_rec rec;
  zkl_debug_counts c0, c1;
  unsigned want[ZKL_RQ_KINDS];
  int64_t token = 0;
  int k, len = sizeof other;
  zkt_name(name, sizeof name, "sem-first-try");
  leases_path(leases, sizeof leases, name);
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  zkt_rec_init(&rec);
  open_one(&h, name, 2);
  open_one(&h2, name, 2);
  open_one(&w, name, 1);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h.l, ZKT_WAIT, NULL), ZKL_OK); /* parents */
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  zkl__debug_counts(h.s, &c0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h.l, ZKT_WAIT, &token), ZKL_OK);
  CU_ASSERT(token > 0);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h.l, path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-try-lease-"));
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  zkt_assert_quiet(h.s);
  zkl__debug_counts(h.s, &c1);
  memset(want, 0, sizeof want);
  want[ZKL_RQ_CREATE] = want[ZKL_RQ_KIND_CHECK] = want[ZKL_RQ_PART_CHECK] =
      want[ZKL_RQ_LIST] = want[ZKL_RQ_RELEASE] = 1;
  zkt_assert_sent(c0.sent, c1.sent, want);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), gate, 0, NULL), ZNONODE);

  /* someone at the gate (as a Curator contender's node there): a lease is
   * free, but the newcomer gives way */
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), gate, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0),
                  ZOK);
  snprintf(path, sizeof path, "%s/_c_firstcomer-lock-", gate);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), path, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
                             other, len),
                  ZOK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(h.l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(h.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
  CU_ASSERT_EQUAL(zkt_children(leases), 0); /* its try's node is gone */
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), other, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(rec.token > token);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h.l, path, sizeof path), ZKL_OK);
  /* it came through the gate */
  CU_ASSERT_PTR_NULL(strstr(path, "-try-lease-"));
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);

  /* two leases taken by first tries (limit 2), and w (limit 1): their
   * names say their limit, and w is refused at once; the same nodes saying
   * no limit (an older libzklock's, made by hand) are more than its limit,
   * but nothing proves a disagreement (test_unstated_limits) */
  CU_ASSERT_EQUAL(zkl_lock_acquire(h.l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(h2.l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(h2.l, path, sizeof path), ZKL_OK);
  CU_ASSERT_PTR_NOT_NULL(strstr(path, "-limit2-try-lease-"));
  CU_ASSERT_EQUAL(zkl_lock_acquire(w.l, 300, NULL), ZKL_ELIMIT);
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(h2.l), ZKL_OK);
  {
    char tries[2][512];
    for (k = 0; k < 2; k++)
      curator_lease(leases, "try-lease-", tries[k], sizeof tries[k]);
    CU_ASSERT_EQUAL(zkl_lock_acquire(w.l, 300, NULL), ZKL_ETIMEDOUT);
    for (k = 0; k < 2; k++)
      CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), tries[k], -1), ZOK);
  }
  close_one(&h);
  close_one(&h2);
  close_one(&w);
  assert_nothing_left(name);
}

/* Waits (bounded) until the session holds nothing: its lease ran out. */
static bool wait_no_hold(zkl_session *s, int timeout_ms) {
  int64_t deadline = zkt_now_ms() + timeout_ms;
  while (zkl_session_lease_deadline(s) != 0) {
    zkt_counter never; /* a bounded poll */
    if (zkt_now_ms() >= deadline)
      return false;
    zkt_counter_init(&never);
    zkt_counter_wait(&never, 1, 10);
  }
  return true;
}

/* A contender past the gate, its lease node made, waits for a lease while
 * it holds the gate (an internal mutex). Its session is cut off (as a
 * process stopped in a GC pause is) past its lease, and comes back within
 * the session: the gate's hold ends with the lease, but the lease node
 * keeps its place, and the lease rule alone keeps at most N, so it waits
 * on and is granted when the holder lets go, as a mutex waiter is. It used
 * to fail with ZKL_ELOST (test_partitions, a holder on a cut-off leader:
 * the semaphore's waiter on a follower was "never granted" when the
 * election outlasted its lease). */
static void test_waiter_past_gate_waits_through_lease(void) {
  char name[64], leases[160];
  holder h;
  zkt_proxied p;
  zkl_lock *w;
  zkt_rec acq;
  zkt_name(name, sizeof name, "sem-gate-lease");
  leases_path(leases, sizeof leases, name);
  open_one(&h, name, 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h.l, -1, NULL), ZKL_OK);
  zkt_proxied_open(&p, 6000);
  CU_ASSERT_EQUAL(zkl_session_set_lease_margin(p.s, 3000), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&w, p.s, name, 1), ZKL_OK);
  zkt_rec_init(&acq);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired, &acq),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  CU_ASSERT(zkl_session_lease_deadline(p.s) != 0); /* it holds the gate */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop"), 0);
  CU_ASSERT(wait_no_hold(p.s, 6000)); /* the gate's hold ended */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(p.s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_dead(p.s, 1), 0); /* it lived through */
  CU_ASSERT_EQUAL(zkt_counter_get(&acq.calls), 0);  /* and still waits */
  CU_ASSERT_EQUAL(zkt_children(leases), 2);         /* in its place */
  CU_ASSERT_EQUAL(zkl_lock_release(h.l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&acq, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  zkl_lock_free(w);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  close_one(&h);
  assert_nothing_left(name);
}

/* The gate's nodes carry the contender's ACL and owner description, as its
 * lease node does. */
static void test_gate_settings(void) {
  char name[64], gate[256], path[512], data[512];
  holder h[2];
  zkt_rec rec;
  struct String_vector kids = {0, NULL};
  struct ACL_vector acl = {0, NULL};
  struct Stat st;
  int i, len = sizeof data - 1;
  zkt_name(name, sizeof name, "sem-settings");
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  zkt_rec_init(&rec);
  for (i = 0; i < 2; i++) {
    open_one(&h[i], name, 1);
    CU_ASSERT_EQUAL(zkl_session_add_auth(h[i].s, "digest", "sem:secret", 10),
                    ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_acl(h[i].l, ZKL_ACL_CREATOR), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_owner_info(h[i].l, "gate-info-42"), ZKL_OK);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h[0].l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(h[1].l, -1, zkt_on_acquired, &rec), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 1, ZKT_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zoo_get_children(zkt_observer(), gate, 0, &kids), ZOK);
  CU_ASSERT_EQUAL_FATAL(kids.count, 1);
  snprintf(path, sizeof path, "%s/%s", gate, kids.data[0]);
  CU_ASSERT_EQUAL(zoo_get_acl(zkt_observer(), path, &acl, &st), ZOK);
  /* the creator's credentials may do all; the world only read (acl.c) */
  CU_ASSERT_EQUAL(acl.count, 2);
  for (i = 0; i < acl.count; i++) {
    bool creator = strcmp(acl.data[i].id.scheme, "digest") == 0;
    CU_ASSERT_EQUAL(acl.data[i].perms, creator ? ZOO_PERM_ALL : ZOO_PERM_READ);
  }
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), path, 0, data, &len, NULL), ZOK);
  if (len >= 0) {
    data[len] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "gate-info-42"));
  }
  deallocate_String_vector(&kids);
  deallocate_ACL_vector(&acl);
  CU_ASSERT_EQUAL(zkl_lock_release(h[0].l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(h[1].l), ZKL_OK);
  for (i = 0; i < 2; i++)
    close_one(&h[i]);
  assert_nothing_left(name);
}

static void test_bad_input(void) {
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l = NULL;
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, s, "x", 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, s, "x", -3), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, s, "", 2), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(&l, NULL, "x", 2), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new_semaphore(NULL, s, "x", 2), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
}

int main(void) {
  static const zkt_test tests[] = {
      {"at most N leases: the next waits, and is granted when one is given "
       "back",
       test_limit},
      {"no herd on the leases", test_no_herd},
      {"node paths: the lease node, then the gate node",
       test_node_paths_gate_and_lease},
      {"at most N holders, many sessions", test_at_most_n},
      {"a contender that disagrees on N is refused with ZKL_ELIMIT, leaving "
       "nothing",
       test_disagreeing_limits},
      {"lease nodes that say no N", test_unstated_limits},
      {"cancel and free in either phase", test_cancel_and_free},
      {"a lease asked for while the last one's gate is still going is granted",
       test_quick_succession},
      {"the lease rule counts the nodes ahead", test_lease_rule},
      {"a try-once beside a contender counting", test_try_once_beside_counting},
      {"a try-once's node that stays is no disagreement",
       test_try_once_node_stays},
      {"a first try skips the gate while nobody is there, and gives way to who "
       "is",
       test_first_try},
      {"the gate's nodes carry the contender's ACL and owner",
       test_gate_settings},
      {"a waiter past the gate waits on when its lease runs out",
       test_waiter_past_gate_waits_through_lease},
      {"a limit below 1 or an empty name is refused with ZKL_EINVAL",
       test_bad_input},
      {NULL, NULL}};
  return zkt_main("semaphore", tests);
}
