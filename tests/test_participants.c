/* SPDX-License-Identifier: Apache-2.0 */
/* test_participants.c - a name's whole lock read through the registry of
 * lock kinds, against a real ZooKeeper: zkl_name_list() lists the name's
 * own queue, a semaphore's leases and its gate, each with whether it holds
 * by its kind's rule (a mutex, readers behind a writer and sharing, an
 * election, a semaphore of our contenders and one with a Curator-like lease
 * node that carries no data); zkl_name_revoke() asks exactly those that hold,
 * or one contender by its node, and writes nothing else. Nothing is left
 * behind. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_SESSION 10000

/* ---------------------------------------------------------------- helpers */

/* The participants of name: their number (the list in *out). */
static int list_of(zkl_session *s, const char *name, zkl_participant **out) {
  int count = -1;
  *out = NULL;
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(s, name, out, &count), ZKL_OK);
  return count;
}

/* Entry i is of kind and holds (or not), or the test fails saying so. */
static void expect(const zkl_participant *list, int count, int i,
                   const char *kind, bool holds) {
  if (!zkt_check(i < count, "entry %d of %d missing", i, count))
    return;
  zkt_check(strcmp(list[i].kind, kind) == 0, "entry %d (%s): kind %s, not %s",
            i, list[i].node, list[i].kind, kind);
  zkt_check(list[i].holds == holds, "entry %d (%s, %s): %s", i, list[i].node,
            list[i].kind, holds ? "does not hold" : "holds");
}

/* The child name of l's node. */
static const char *child_of(zkl_lock *l, char *buf, size_t len) {
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, buf, len), ZKL_OK);
  return strrchr(buf, '/') + 1;
}

/* Waits until path has want children. */
static void wait_children(const char *path, int want) {
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(path, want, ZKT_WAIT), want);
}

/* Waits until l knows its node, under prefix. Another session can list a
 * node before its creator has read the create's reply (seen under ASan),
 * so a count of children does not say the creator knows its path yet. */
static void wait_node_known(zkl_lock *l, const char *prefix) {
  char path[ZKL_PATH_MAX];
  int64_t until = zkt_now_ms() + ZKT_WAIT;
  for (;;) {
    if (zkl_lock_get_node_path(l, path, sizeof path) == ZKL_OK &&
        strncmp(path, prefix, strlen(prefix)) == 0)
      return;
    if (zkt_now_ms() > until)
      break;
    usleep(10 * 1000);
  }
  CU_FAIL_FATAL("the lock did not learn its node within ZKT_WAIT");
}

static void place_path(char *buf, size_t len, const char *name,
                       const char *place) {
  snprintf(buf, len, "/locks/%s/%s", name, place);
}

static void assert_semaphore_left_nothing(const char *name) {
  char sub[128];
  snprintf(sub, sizeof sub, "%s/leases", name);
  zkt_assert_parent_empty(sub);
  snprintf(sub, sizeof sub, "%s/locks", name);
  zkt_assert_parent_empty(sub);
}

/* A node's data as the observer reads it ("" when empty), and its
 * version. */
static int data_of(const char *path, char *buf, int len, int *version) {
  struct Stat st;
  int n = len - 1, rc = zoo_get(zkt_observer(), path, 0, buf, &n, &st);
  buf[rc == ZOK && n > 0 ? n : 0] = '\0';
  if (version)
    *version = rc == ZOK ? st.version : -1;
  return rc;
}

/* Creates an ephemeral sequential node under parent as the observer (a
 * client of another library), with data[0..len); parent made again, as a
 * container, should the server have reaped it. */
static int create_as_peer(const char *parent, const char *prefix,
                          const char *data, int len, char *out, int outlen) {
  char path[512];
  int rc = ZNONODE, tries;
  snprintf(path, sizeof path, "%s/%s", parent, prefix);
  for (tries = 0; rc == ZNONODE && tries < 5; tries++) {
    rc = zoo_create(zkt_observer(), path, data, len, &ZOO_OPEN_ACL_UNSAFE,
                    ZOO_EPHEMERAL_SEQUENTIAL, out, outlen);
    if (rc == ZNONODE)
      zoo_create(zkt_observer(), parent, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                 ZOO_CONTAINER, NULL, 0);
  }
  return rc;
}

static void on_revoke(zkl_lock *l, void *arg) {
  zkt_on_released(l, ZKL_OK, arg);
}

/* ------------------------------------------------------------------ tests */

/* A mutex: its holder holds, its waiter does not; nobody: an empty list. */
static void test_mutex_holds(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  zkl_participant *list;
  zkt_rec got;
  int n, i;
  zkt_name(name, sizeof name, "parts-mutex");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&got);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 0);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(b, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  wait_children(parent, 2);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 2);
  expect(list, n, 0, "lock", true);
  expect(list, n, 1, "lock", false);
  CU_ASSERT(n < 1 || list[0].limit == 0);
  for (i = 0; i < n; i++) {
    CU_ASSERT_STRING_EQUAL(list[i].lock, "mutex");
    CU_ASSERT_FALSE(list[i].repeated);
  }
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 1);
  expect(list, n, 0, "lock", true);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Readers queued behind a writer do not hold; readers ahead of a writer
 * share the lock, and a reader behind that writer does not. */
static void test_readers_hold(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_rwlock *rw[4];
  zkl_participant *list;
  zkt_rec got[4];
  int n, i;
  zkt_name(name, sizeof name, "parts-rw");
  zkt_parent(parent, sizeof parent, name);
  for (i = 0; i < 4; i++) {
    CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw[i], s, name), ZKL_OK);
    zkt_rec_init(&got[i]);
  }
  /* a writer holds; two readers behind it */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(zkl_rwlock_write(rw[0]), 5000, NULL),
                        ZKL_OK);
  for (i = 1; i < 3; i++)
    CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_read(rw[i]), -1,
                                           zkt_on_acquired, &got[i]),
                    ZKL_OK);
  wait_children(parent, 3);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 3);
  expect(list, n, 0, "write", true);
  expect(list, n, 1, "read", false);
  expect(list, n, 2, "read", false);
  for (i = 0; i < n; i++) {
    CU_ASSERT_STRING_EQUAL(list[i].lock, "rwlock");
    CU_ASSERT_FALSE(list[i].repeated);
  }
  zkl_name_list_free(list);
  /* the writer goes: both readers hold; a writer and a reader queue */
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(rw[0])), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got[1], 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got[2], 1, ZKT_WAIT), ZKL_OK);
  zkt_rec_init(&got[0]);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_write(rw[0]), -1,
                                         zkt_on_acquired, &got[0]),
                  ZKL_OK);
  wait_children(parent, 3);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(zkl_rwlock_read(rw[3]), -1,
                                         zkt_on_acquired, &got[3]),
                  ZKL_OK);
  wait_children(parent, 4);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 4);
  expect(list, n, 0, "read", true);
  expect(list, n, 1, "read", true);
  expect(list, n, 2, "write", false);
  expect(list, n, 3, "read", false);
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw[1])), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw[2])), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got[0], 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(rw[0])), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got[3], 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw[3])), ZKL_OK);
  for (i = 0; i < 4; i++)
    zkl_rwlock_free(rw[i]);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* An election's first candidate leads: it holds, the next does not. */
static void test_election_holds(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  zkl_participant *list;
  zkt_rec got;
  int n, i;
  zkt_name(name, sizeof name, "parts-elect");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&a, s, name, "alpha"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&b, s, name, "beta"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(b, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  wait_children(parent, 2);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 2);
  expect(list, n, 0, "latch", true);
  expect(list, n, 1, "latch", false);
  for (i = 0; i < n; i++) {
    CU_ASSERT_STRING_EQUAL(list[i].lock, "election");
    CU_ASSERT_FALSE(list[i].repeated);
  }
  zkl_name_list_free(list);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A semaphore of 2, our contenders: two lease holders, and a waiter whose
 * lease node counts behind them while it holds the gate. */
typedef struct sem3 {
  char name[64], leases[512], gate[512];
  zkl_session *s[3];
  zkl_lock *l[3];
  zkt_rec revoked[3], got;
} sem3;

static void sem3_open(sem3 *t, const char *base) {
  int i;
  memset(t, 0, sizeof *t);
  zkt_name(t->name, sizeof t->name, base);
  place_path(t->leases, sizeof t->leases, t->name, "leases");
  place_path(t->gate, sizeof t->gate, t->name, "locks");
  zkt_rec_init(&t->got);
  for (i = 0; i < 3; i++) {
    t->s[i] = zkt_session(T_SESSION);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&t->l[i], t->s[i], t->name, 2),
                          ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_owner_info(t->l[i], "sem3"), ZKL_OK);
    zkt_rec_init(&t->revoked[i]);
    zkl_lock_on_revoke(t->l[i], on_revoke, &t->revoked[i]);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(t->l[0], 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(t->l[1], 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(
      zkl_lock_acquire_async(t->l[2], -1, zkt_on_acquired, &t->got), ZKL_OK);
  /* the gate first: the waiter's first try's lease node, which a count of
   * leases could meet, is gone by then (its delete went before the gate's
   * create), and the lease node it makes behind the gate comes next */
  wait_children(t->gate, 1);
  wait_children(t->leases, 3);
  wait_node_known(t->l[2], t->leases);
}

static void sem3_close(sem3 *t) {
  int i;
  CU_ASSERT_EQUAL(zkl_lock_release(t->l[0]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&t->got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(t->l[1]), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(t->l[2]), ZKL_OK);
  for (i = 0; i < 3; i++) {
    zkt_assert_quiet(t->s[i]);
    zkl_lock_free(t->l[i]);
    zkl_session_close(t->s[i], NULL);
  }
  assert_semaphore_left_nothing(t->name);
}

/* One list: the leases, holding by their own limit, then the gate, whose
 * nodes never hold; a lease node says its limit beside the owner
 * description. */
static void test_semaphore_holds(void) {
  char path[ZKL_PATH_MAX], data[512];
  zkl_participant *list;
  sem3 t;
  int n, i;
  sem3_open(&t, "parts-sem");
  n = list_of(t.s[0], t.name, &list);
  CU_ASSERT_EQUAL(n, 4);
  expect(list, n, 0, "lease", true);
  expect(list, n, 1, "lease", true);
  expect(list, n, 2, "lease", false); /* the waiter's: 2 ahead, limit 2 */
  expect(list, n, 3, "gate", false);  /* the waiter holds the gate */
  for (i = 0; i < n && i < 3; i++) {
    CU_ASSERT_EQUAL(list[i].limit, 2);
    CU_ASSERT_STRING_EQUAL(list[i].info, "sem3");
    CU_ASSERT(list[i].pid > 0 && list[i].host[0] != '\0');
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(t.l[i], path, sizeof path), ZKL_OK);
    CU_ASSERT_STRING_EQUAL(list[i].node, path);
  }
  if (n == 4) {
    CU_ASSERT_EQUAL(list[3].limit, 0);
    CU_ASSERT_EQUAL(strncmp(list[3].node, t.gate, strlen(t.gate)), 0);
    /* the lease node's data: the owner description, then the limit */
    CU_ASSERT_EQUAL(data_of(list[0].node, data, sizeof data, NULL), ZOK);
    CU_ASSERT(strncmp(data, "host=", 5) == 0);
    CU_ASSERT(strstr(data, "\ninfo=sem3\nlimit=2\n") != NULL);
  }
  zkl_name_list_free(list);
  sem3_close(&t);
}

/* The lock each contender takes, and the waiter at the gate listed twice:
 * its lease node first, then its gate node with repeated set, so that the
 * contenders counted without repeated ones are the three semaphores. */
static void test_semaphore_waiter_at_gate_is_repeated(void) {
  zkl_participant *list;
  sem3 t;
  int n, i, contenders = 0;
  sem3_open(&t, "parts-sem-rep");
  n = list_of(t.s[0], t.name, &list);
  CU_ASSERT_EQUAL(n, 4);
  expect(list, n, 3, "gate", false);
  for (i = 0; i < n; i++) {
    CU_ASSERT_STRING_EQUAL(list[i].lock, "semaphore");
    zkt_check(list[i].repeated == (i == 3), "entry %d (%s): repeated %d", i,
              list[i].node, (int)list[i].repeated);
    contenders += !list[i].repeated;
  }
  CU_ASSERT_EQUAL(contenders, 3);
  zkl_name_list_free(list);
  sem3_close(&t);
}

/* zkl_lock_get_queues: a mutex's queue is its name's; a semaphore's its
 * leases then its gate (its part's); a multi-lock's each name's; every
 * one among zkl_name_get_queues' of its name. Too small a buffer or NULL:
 * ZKL_EINVAL, nothing sent. */
static void test_lock_get_queues_names_each_queue_used(void) {
  char name[64], want[3 * ZKL_PATH_MAX], buf[3 * ZKL_PATH_MAX],
      all[3 * ZKL_PATH_MAX];
  const char *multi[2];
  char other[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *m, *sem, *ml;
  zkt_name(name, sizeof name, "parts-queues");
  zkt_name(other, sizeof other, "parts-queues2");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&m, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&sem, s, name, 2), ZKL_OK);
  multi[0] = name;
  multi[1] = other;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&ml, s, multi, 2), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_get_queues(name, all, sizeof all), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(m, buf, sizeof buf), ZKL_OK);
  snprintf(want, sizeof want, "/locks/%s", name);
  CU_ASSERT_STRING_EQUAL(buf, want);
  CU_ASSERT_EQUAL(strncmp(all, want, strlen(want)), 0);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(sem, buf, sizeof buf), ZKL_OK);
  snprintf(want, sizeof want, "/locks/%s/leases /locks/%s/locks", name, name);
  CU_ASSERT_STRING_EQUAL(buf, want);
  CU_ASSERT(strstr(all, want) != NULL);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(ml, buf, sizeof buf), ZKL_OK);
  snprintf(want, sizeof want, "/locks/%s /locks/%s", name, other);
  CU_ASSERT_STRING_EQUAL(buf, want);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(sem, buf, strlen(name) + 14),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(NULL, buf, sizeof buf), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_get_queues(m, NULL, sizeof buf), ZKL_EINVAL);
  zkl_lock_free(m);
  zkl_lock_free(sem);
  zkl_lock_free(ml);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A Curator-like contender, whose lease node carries no data (no limit to
 * read): waiting for a lease, it holds the gate, and its lease node does
 * not hold; once it lets go of the gate, its lease node holds. And
 * zkl_name_revoke(NULL) then asks it, beside our holder. */
static void test_curator_lease_holds(void) {
  char name[64], leases[512], gate[512], gate_node[512], lease_node[512],
      data[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *ours;
  zkl_participant *list;
  zkt_rec revoked;
  int n;
  zkt_name(name, sizeof name, "parts-curator");
  place_path(leases, sizeof leases, name, "leases");
  place_path(gate, sizeof gate, name, "locks");
  zkt_rec_init(&revoked);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&ours, s, name, 1), ZKL_OK);
  zkl_lock_on_revoke(ours, on_revoke, &revoked);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(ours, 5000, NULL), ZKL_OK);
  /* the Curator-like one (the observer's session): the gate, then a lease
   * node without data behind ours */
  CU_ASSERT_EQUAL_FATAL(
      create_as_peer(gate, "_c_0b7c1b0e-6c2a-4d4e-9a55-1f2e3d4c5b6a-lock-",
                     NULL, -1, gate_node, sizeof gate_node),
      ZOK);
  CU_ASSERT_EQUAL_FATAL(
      create_as_peer(leases, "_c_0b7c1b0e-6c2a-4d4e-9a55-1f2e3d4c5b6a-lease-",
                     "", 0, lease_node, sizeof lease_node),
      ZOK);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 3);
  expect(list, n, 0, "lease", true);
  expect(list, n, 1, "lease", false); /* it holds the gate: it waits */
  expect(list, n, 2, "gate", false);
  if (n == 3) {
    CU_ASSERT_EQUAL(list[0].limit, 1);
    CU_ASSERT_EQUAL(list[1].limit, 0);
    CU_ASSERT_STRING_EQUAL(list[1].node, lease_node);
    CU_ASSERT_STRING_EQUAL(list[2].node, gate_node);
  }
  zkl_name_list_free(list);
  /* it lets go of the gate: its lease holds, whatever its limit is */
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), gate_node, -1), ZOK);
  n = list_of(s, name, &list);
  CU_ASSERT_EQUAL(n, 2);
  expect(list, n, 0, "lease", true);
  expect(list, n, 1, "lease", true);
  zkl_name_list_free(list);
  /* both holders are asked */
  CU_ASSERT_EQUAL(zkl_name_revoke(s, name, NULL), ZKL_OK);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&revoked, 1, ZKT_WAIT), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(data_of(lease_node, data, sizeof data, NULL), ZOK);
  CU_ASSERT_STRING_EQUAL(data, "__REVOKE__");
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), lease_node, -1), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_release(ours), ZKL_OK);
  zkl_lock_free(ours);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  assert_semaphore_left_nothing(name);
}

/* zkl_name_revoke(NULL) on a semaphore that two contenders hold asks both, and
 * not the waiter, whose node keeps its owner description. */
static void test_revoke_semaphore_holders(void) {
  char path[ZKL_PATH_MAX], data[512];
  sem3 t;
  sem3_open(&t, "parts-revoke");
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, NULL), ZKL_OK);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&t.revoked[0], 1, ZKT_WAIT), ZKT_NO_CALL);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&t.revoked[1], 1, ZKT_WAIT), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(t.l[2], path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(data_of(path, data, sizeof data, NULL), ZOK);
  CU_ASSERT(strstr(data, "limit=2\n") != NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&t.revoked[2].calls), 0);
  sem3_close(&t);
}

/* zkl_name_revoke() by node: a semaphore's places are no contenders (refused,
 * nothing written); its waiter, named by its lease node or its gate node,
 * is one, and only it is asked. */
static void test_revoke_by_node(void) {
  char path[ZKL_PATH_MAX], data[512], leases0[512], gate0[512];
  zkl_participant *list;
  int v0, v1, g0, g1, i, n;
  sem3 t;
  sem3_open(&t, "parts-revoke-node");
  CU_ASSERT_EQUAL(data_of(t.leases, leases0, sizeof leases0, &v0), ZOK);
  CU_ASSERT_EQUAL(data_of(t.gate, gate0, sizeof gate0, &g0), ZOK);
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, "leases"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, "locks"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, ""), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, "leases/x"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(data_of(t.leases, data, sizeof data, &v1), ZOK);
  CU_ASSERT_STRING_EQUAL(data, leases0);
  CU_ASSERT_EQUAL(v1, v0);
  CU_ASSERT_EQUAL(data_of(t.gate, data, sizeof data, &g1), ZOK);
  CU_ASSERT_STRING_EQUAL(data, gate0);
  CU_ASSERT_EQUAL(g1, g0);
  /* a contender's node that is not there: nobody to ask */
  CU_ASSERT_EQUAL(zkl_name_revoke(t.s[0], t.name, "_c_nobody-lease-0000000001"),
                  ZKL_ENOTHELD);
  /* the waiter, by its lease node: only it is asked */
  CU_ASSERT_EQUAL(
      zkl_name_revoke(t.s[0], t.name, child_of(t.l[2], path, sizeof path)),
      ZKL_OK);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&t.revoked[2], 1, ZKT_WAIT), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(data_of(path, data, sizeof data, NULL), ZOK);
  CU_ASSERT_STRING_EQUAL(data, "__REVOKE__");
  for (i = 0; i < 2; i++) {
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(t.l[i], path, sizeof path), ZKL_OK);
    CU_ASSERT_EQUAL(data_of(path, data, sizeof data, NULL), ZOK);
    CU_ASSERT(strstr(data, "limit=2\n") != NULL);
  }
  /* ... and by its gate node */
  n = list_of(t.s[0], t.name, &list);
  CU_ASSERT_EQUAL(n, 4);
  if (n == 4) {
    CU_ASSERT_EQUAL(
        zkl_name_revoke(t.s[0], t.name, strrchr(list[3].node, '/') + 1), ZKL_OK);
    CU_ASSERT_EQUAL(data_of(list[3].node, data, sizeof data, NULL), ZOK);
    CU_ASSERT_STRING_EQUAL(data, "__REVOKE__");
    /* the gate's node is the semaphore's own: its callback is asked */
    CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&t.revoked[2], 2, ZKT_WAIT),
                        ZKT_NO_CALL);
    CU_ASSERT(t.revoked[2].lock == t.l[2]);
  }
  CU_ASSERT_EQUAL(zkt_counter_get(&t.revoked[0].calls), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&t.revoked[1].calls), 0);
  zkl_name_list_free(list);
  sem3_close(&t);
}

/* zkl_name_find(): every lock under a prefix, of every kind (a mutex, a
 * semaphore, an election, a name of two segments, a name that is also the
 * prefix of another's), and no node that is only a path; the bound on the
 * walk says so when it cuts. */
static void test_lock_names(void) {
  char base[64], name[4][128], other[192];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l[4];
  char **names;
  int n, i;
  bool cut = true;
  zkt_name(base, sizeof base, "walk");
  snprintf(name[0], sizeof name[0], "%s/m", base);
  snprintf(name[1], sizeof name[1], "%s/deep/sem", base);
  snprintf(name[2], sizeof name[2], "%s/e", base);
  snprintf(name[3], sizeof name[3], "%s/m/inner", base);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s, name[0]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l[1], s, name[1], 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&l[2], s, name[2], "id"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[3], s, name[3]), ZKL_OK);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(zkl_lock_acquire(l[i], 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_name_find(s, base, 1000, &names, &n, &cut), ZKL_OK);
  CU_ASSERT_FALSE(cut);
  CU_ASSERT_EQUAL(n, 4);
  if (n == 4) { /* sorted */
    CU_ASSERT_STRING_EQUAL(names[0], name[1]);
    CU_ASSERT_STRING_EQUAL(names[1], name[2]);
    CU_ASSERT_STRING_EQUAL(names[2], name[0]);
    CU_ASSERT_STRING_EQUAL(names[3], name[3]);
  }
  zkl_name_find_free(names, n);
  /* the prefix itself, when it is a lock */
  CU_ASSERT_EQUAL(zkl_name_find(s, name[0], 1000, &names, &n, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(n, 2);
  zkl_name_find_free(names, n);
  /* everything: ours among them */
  CU_ASSERT_EQUAL(zkl_name_find(s, "", 100000, &names, &n, &cut), ZKL_OK);
  CU_ASSERT(n >= 4);
  zkl_name_find_free(names, n);
  /* cut short */
  CU_ASSERT_EQUAL(zkl_name_find(s, base, 2, &names, &n, &cut), ZKL_OK);
  CU_ASSERT_TRUE(cut);
  CU_ASSERT(n < 4);
  zkl_name_find_free(names, n);
  /* nothing there; bad prefixes */
  snprintf(other, sizeof other, "%s/none", base);
  CU_ASSERT_EQUAL(zkl_name_find(s, other, 10, &names, &n, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(n, 0);
  zkl_name_find_free(names, n);
  CU_ASSERT_EQUAL(zkl_name_find(s, "/zookeeper", 10, &names, &n, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_find(s, base, 0, &names, &n, NULL), ZKL_EINVAL);
  for (i = 3; i >= 0; i--) {
    CU_ASSERT_EQUAL(zkl_lock_release(l[i]), ZKL_OK);
    zkl_lock_free(l[i]);
  }
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  for (i = 1; i < 4; i++)
    zkt_assert_no_contender(name[i]);
  /* m keeps its child m/inner (a container, until the server reaps it) */
  snprintf(other, sizeof other, "/locks/%s", name[0]);
  CU_ASSERT(zkt_children(other) <= 1);
}

/* Whether names[0..n-1] has name. */
static bool has_name(char **names, int n, const char *name) {
  int i;
  for (i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0)
      return true;
  return false;
}

/* zkl_name_find() of locks whose name starts with "locks" or "leases",
 * which the name rules allow as a first segment (issue 24 item 7: the walk
 * took /locks/locks and /locks/leases for places of /locks, and hid them):
 * a mutex "locks", a semaphore "leases" (whose own places are not names),
 * a mutex "locks/U" and an election "leases/U/y". */
static void test_lock_names_locks_leases(void) {
  char u[64], name[4][128], **names;
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l[4];
  int n, i;
  bool cut = true;
  zkt_name(u, sizeof u, "walk-ll");
  snprintf(name[0], sizeof name[0], "locks");
  snprintf(name[1], sizeof name[1], "leases");
  snprintf(name[2], sizeof name[2], "locks/%s", u);
  snprintf(name[3], sizeof name[3], "leases/%s/y", u);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL_FATAL(zkl_name_check(name[i]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s, name[0]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l[1], s, name[1], 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[2], s, name[2]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&l[3], s, name[3], "id"), ZKL_OK);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(zkl_lock_acquire(l[i], ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_find(s, "", 100000, &names, &n, &cut), ZKL_OK);
  CU_ASSERT_FALSE(cut);
  for (i = 0; i < 4; i++)
    zkt_check(has_name(names, n, name[i]), "'%s' not listed", name[i]);
  CU_ASSERT_FALSE(has_name(names, n, "leases/locks"));
  CU_ASSERT_FALSE(has_name(names, n, "leases/leases"));
  zkl_name_find_free(names, n);
  /* under a prefix that is one of them */
  CU_ASSERT_EQUAL(zkl_name_find(s, "leases", 100000, &names, &n, NULL), ZKL_OK);
  CU_ASSERT(has_name(names, n, name[1]) && has_name(names, n, name[3]));
  CU_ASSERT_FALSE(has_name(names, n, "leases/locks"));
  CU_ASSERT_FALSE(has_name(names, n, "leases/leases"));
  zkl_name_find_free(names, n);
  CU_ASSERT_EQUAL(zkl_name_find(s, name[2], 10, &names, &n, NULL), ZKL_OK);
  CU_ASSERT(n == 1 && strcmp(names[0], name[2]) == 0);
  zkl_name_find_free(names, n);
  for (i = 3; i >= 0; i--) {
    CU_ASSERT_EQUAL(zkl_lock_release(l[i]), ZKL_OK);
    zkl_lock_free(l[i]);
  }
  /* "locks" and "leases" keep the parents of the others (containers,
   * until the server reaps them), which zkt_assert_no_contender would
   * count: nobody is left in their queues */
  for (i = 0; i < 2; i++) {
    zkl_participant *list;
    CU_ASSERT_EQUAL(zkl_name_list(s, name[i], &list, &n), ZKL_OK);
    zkt_check(n == 0, "%d contenders left in %s", n, name[i]);
    zkl_name_list_free(list);
  }
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  for (i = 2; i < 4; i++)
    zkt_assert_no_contender(name[i]);
}

/* A one-shot question whose reply is lost with its connection asks again
 * once the session is connected, within the session timeout (issue 24 item
 * 9: after a move to other servers, zklock --list said "connection loss").
 * The proxy resets the connection right after the request of an opcode
 * went through (the server acts on it, the reply is lost); the client
 * reconnects through it in the same session. ZooKeeper's opcodes:
 * getChildren 8, setData 5, delete 2. */
static void lose_reply_of(zkt_proxied *q, int op) {
  char cmd[64];
  snprintf(cmd, sizeof cmd, "reset-after-op %d", op);
  CU_ASSERT_EQUAL_FATAL(proxyctl_cmd(q->px, cmd, NULL, 0, ZKT_WAIT), 0);
}

static void test_questions_ask_again(void) {
  char base[64], name[128], elect[128], got[64] = "";
  zkl_session *hs = zkt_session(T_SESSION);
  zkl_lock *l, *e;
  zkl_participant *list;
  zkt_proxied q;
  zkt_rec lost;
  char **names;
  int n, fired = 0;
  int64_t token = 0, epoch = 0, t = 0;
  zkt_name(base, sizeof base, "ask-again");
  snprintf(name, sizeof name, "%s/m", base);
  snprintf(elect, sizeof elect, "%s/e", base);
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, hs, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&e, hs, elect, "leader-id"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(e, ZKT_WAIT, &epoch), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(hs, ZKT_WAIT), 0);
  zkt_proxied_open(&q, T_SESSION);

  lose_reply_of(&q, 8);
  if (zkt_check(zkl_name_list(q.s, name, &list, &n) == ZKL_OK,
                "zkl_name_list after a lost reply")) {
    CU_ASSERT(n == 1 && list[0].token == token);
    zkl_name_list_free(list);
  }
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;

  lose_reply_of(&q, 8);
  CU_ASSERT_EQUAL(zkl_name_get_leader(q.s, elect, got, sizeof got, &t), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;
  CU_ASSERT(strcmp(got, "leader-id") == 0 && t == epoch);

  lose_reply_of(&q, 8);
  if (zkt_check(zkl_name_find(q.s, base, 100, &names, &n, NULL) == ZKL_OK,
                "zkl_name_find after a lost reply")) {
    CU_ASSERT_EQUAL(n, 2);
    zkl_name_find_free(names, n);
  }
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;

  /* the revoke's write, lost: asked again from the listing */
  lose_reply_of(&q, 5);
  CU_ASSERT_EQUAL(zkl_name_revoke(q.s, name, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;

  /* the break's mark, lost: read again, the node broken all the same */
  lose_reply_of(&q, 5);
  CU_ASSERT_EQUAL(zkl_name_break(q.s, name, NULL, 0, NULL, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);

  /* the break's delete, lost: the node is gone, but whose delete that was
   * is not known: said so (not "it let go") */
  zkt_rec_init(&lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(hs, ZKT_WAIT), 0);
  lose_reply_of(&q, 2);
  CU_ASSERT_EQUAL(zkl_name_break(q.s, name, NULL, 0, NULL, NULL), ZCONNECTIONLOSS);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(q.px, ZKT_WAIT), 0);
  fired++;
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, ZKT_WAIT), ZKL_LOST_BROKEN);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(proxyctl_fired_count(q.px), fired);

  CU_ASSERT_EQUAL(zkl_lock_release(e), ZKL_OK);
  zkl_lock_free(l);
  zkl_lock_free(e);
  zkt_assert_quiet(q.s);
  zkt_proxied_close(&q);
  zkt_assert_quiet(hs);
  zkl_session_close(hs, NULL);
  zkt_assert_no_contender(name);
  zkt_assert_no_contender(elect);
}

/* zkl_session_get_stats(): requests counted, a lock held and one waiting,
 * the waiter's watch firing when the holder lets go; the other session's
 * counters are its own. */
static void test_session_stats(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION), *t = zkt_session(T_SESSION);
  zkl_session_stats st, before;
  zkl_lock *a, *b;
  zkt_rec got;
  zkt_name(name, sizeof name, "stats");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL(zkl_session_get_stats(NULL, &st), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL_FATAL(zkl_session_get_stats(s, &before), ZKL_OK);
  CU_ASSERT_EQUAL(before.locks_held, 0);
  CU_ASSERT_EQUAL(before.locks_waiting, 0);
  CU_ASSERT_EQUAL(before.expiries, 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, t, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(b, -1, zkt_on_acquired, &got),
                  ZKL_OK);
  wait_children(parent, 2);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 1);
  CU_ASSERT_EQUAL(st.locks_waiting, 0);
  CU_ASSERT(st.requests >= before.requests + 2); /* create, listing */
  CU_ASSERT_EQUAL(zkl_session_get_stats(t, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 0);
  CU_ASSERT_EQUAL(st.locks_waiting, 1);
  CU_ASSERT_EQUAL(st.watch_events, 0);
  before = st;
  /* a question is a query */
  {
    zkl_participant *list;
    CU_ASSERT_EQUAL(list_of(t, name, &list), 2);
    zkl_name_list_free(list);
  }
  CU_ASSERT_EQUAL(zkl_session_get_stats(t, &st), ZKL_OK);
  CU_ASSERT(st.queries >= before.queries + 2);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_get_stats(t, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 1);
  CU_ASSERT_EQUAL(st.locks_waiting, 0);
  CU_ASSERT(st.watch_events >= 1); /* its predecessor's deletion */
  CU_ASSERT_EQUAL(st.reconnects, 0);
  CU_ASSERT_EQUAL(st.expiries, 0);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.locks_held, 0);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s);
  zkt_assert_quiet(t);
  /* expiry counted */
  CU_ASSERT_EQUAL_FATAL(zkt_expire(t), 0);
  CU_ASSERT_NOT_EQUAL(zkl__debug_wait_dead(t, ZKT_WAIT), 0);
  /* the counters all the same, and the code says the session is over */
  CU_ASSERT_EQUAL(zkl_session_get_stats(t, &st), ZKL_EEXPIRED);
  CU_ASSERT_EQUAL(st.expiries, 1);
  zkl_session_close(s, NULL);
  zkl_session_close(t, NULL);
  zkt_assert_parent_empty(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"a mutex: its holder holds", test_mutex_holds},
      {"readers behind a writer, readers sharing", test_readers_hold},
      {"an election: its leader holds", test_election_holds},
      {"a semaphore: leases by their limit, the gate", test_semaphore_holds},
      {"lock is each contender's lock; the waiter's gate node is repeated",
       test_semaphore_waiter_at_gate_is_repeated},
      {"zkl_lock_get_queues names each queue the contender uses",
       test_lock_get_queues_names_each_queue_used},
      {"a Curator-like lease without data", test_curator_lease_holds},
      {"revoke asks every lease holder", test_revoke_semaphore_holders},
      {"revoke by node: contenders only", test_revoke_by_node},
      {"zkl_name_find: the locks under a prefix", test_lock_names},
      {"zkl_name_find: names that start with locks or leases",
       test_lock_names_locks_leases},
      {"one-shot questions ask again after a lost reply",
       test_questions_ask_again},
      {"zkl_session_get_stats: the session's counters", test_session_stats},
      {NULL, NULL}};
  return zkt_main("participants", tests);
}
