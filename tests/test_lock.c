/* SPDX-License-Identifier: Apache-2.0 */
/* test_lock.c - the exclusive lock against a real ZooKeeper: acquire and
 * release, tokens, reentrancy, exclusion, timeouts, cancel, bad input, the
 * recipe's corner cases (rules 2-6 of docs/recipe.md) and round trips. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "zktest.h"

#define T_SESSION 10000
#define T_WAIT 10000

static int stat_of(const char *path, struct Stat *st) {
  return zoo_exists(zkt_observer(), path, 0, st);
}

/* Creates the container path unless it exists; the observer must manage
 * one or the other. */
static void make_container(const char *path) {
  int rc = zoo_create(zkt_observer(), path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                      ZOO_CONTAINER, NULL, 0);
  zkt_check(rc == ZOK || rc == ZNODEEXISTS, "the observer made %s: %s", path,
            zerror(rc));
}

/* A contender that is not us: an ephemeral sequential node of the observer
 * session, named as ours are. Returns its full path in buf. */
static void foreign_node(const char *name, char *buf, size_t len) {
  char prefix[ZKL_PREFIX_LEN + 1], path[512];
  int rc;
  CU_ASSERT_EQUAL_FATAL(zkl__make_prefix(prefix), ZKL_OK);
  snprintf(path, sizeof path, "/locks/%s", name);
  make_container("/locks");
  make_container(path);
  snprintf(path, sizeof path, "/locks/%s/%s", name, prefix);
  rc = zoo_create(zkt_observer(), path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE,
                  ZOO_EPHEMERAL_SEQUENTIAL, buf, (int)len);
  CU_ASSERT_FATAL(rc == ZOK);
}

/* ---------------------------------------------------------------- basics */

static void test_acquire_release(void) {
  char name[64], path[512], parent[512], data[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  int64_t token = 0;
  struct Stat st;
  int len = sizeof data - 1;
  zkt_name(name, sizeof name, "basic");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(zkl_lock_name(l), name);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_ENOTHELD);

  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &token), ZKL_OK);
  CU_ASSERT(token > 0);
  CU_ASSERT_EQUAL(zkl_lock_token(l), token);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  /* /locks/<name>/_c_<id>-lock-<seq>, the id 16 hex digits */
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_NSTRING_EQUAL(path, parent, strlen(parent));
  CU_ASSERT_NSTRING_EQUAL(path + strlen(parent), "/_c_", 4);
  CU_ASSERT_EQUAL(strspn(path + strlen(parent) + 4, "0123456789abcdef"), 16);
  CU_ASSERT_NSTRING_EQUAL(path + strlen(parent) + 20, "-lock-", 6);
  CU_ASSERT_EQUAL(strlen(path + strlen(parent) + 26), 10);

  /* The token is the node's czxid, and the node is this session's. */
  CU_ASSERT_EQUAL_FATAL(stat_of(path, &st), ZOK);
  CU_ASSERT_EQUAL(st.czxid, token);
  CU_ASSERT_EQUAL(st.ephemeralOwner,
                  zoo_client_id(zkl_session_handle(s))->client_id);
  /* It says who holds it. */
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), path, 0, data, &len, NULL), ZOK);
  data[len > 0 ? len : 0] = '\0';
  {
    char want[64];
    snprintf(want, sizeof want, "pid=%ld\n", (long)getpid());
    CU_ASSERT_PTR_NOT_NULL(strstr(data, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(data, "host="));
  }
  /* The parents exist (that they are containers shows in
   * test_container_reaped: clients see no mark of it in a Stat). */
  CU_ASSERT_EQUAL(stat_of(parent, &st), ZOK);
  CU_ASSERT_EQUAL(stat_of("/locks", &st), ZOK);

  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(stat_of(path, &st), ZNONODE); /* gone when release returns */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  zkt_assert_quiet(s);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

static void test_nested_name(void) {
  char name[600], path[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  struct Stat st;
  zkt_name(path, sizeof path, "nested");
  snprintf(name, sizeof name, "%s/b/c", path);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  snprintf(path, sizeof path, "/locks/%.400s", name);
  CU_ASSERT_EQUAL(zkt_children(path), 1);
  *strrchr(path, '/') = '\0'; /* /locks/nested-x/b */
  CU_ASSERT_EQUAL(stat_of(path, &st), ZOK);
  CU_ASSERT_EQUAL(st.numChildren, 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A name that starts with '/' is its own znode, for every kind: each holds
 * a node right under the path (or under its semaphore places), none under
 * /locks; a mutex and a reader on it exclude each other (one lock); a
 * multi-lock takes two full paths; zkl_name_find() from a full prefix
 * reports full paths, zkl_name_list() sees the holder, and zkl_name_break()
 * breaks it. */
static void test_full_path_every_kind(void) {
  char top[64], name[128], other[128], third[128], node[ZKL_PATH_MAX];
  char want[160];
  const char *names[2];
  zkl_session *s = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *l, *m;
  zkl_rwlock *rw;
  zkl_participant *who;
  char **found;
  int n, i;
  bool truncated;
  zkt_name(top, sizeof top, "/full");
  snprintf(name, sizeof name, "%s/jobs/nightly", top);
  snprintf(other, sizeof other, "%s/jobs/weekly", top);
  snprintf(third, sizeof third, "%s/jobs/monthly", top);
  /* mutex */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  snprintf(want, sizeof want, "%s/", name);
  CU_ASSERT(strncmp(node, want, strlen(want)) == 0);
  CU_ASSERT_EQUAL(zkt_children(name), 1);
  /* a reader on the same full path waits: one lock */
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw), 0, NULL), ZKL_EBUSY);
  /* listed, found by a full prefix (as a full path), broken */
  CU_ASSERT_EQUAL_FATAL(zkl_name_list(s2, name, &who, &n), ZKL_OK);
  CU_ASSERT_EQUAL(n, 1);
  if (n == 1)
    CU_ASSERT_STRING_EQUAL(who[0].node, node);
  zkl_name_list_free(who);
  CU_ASSERT_EQUAL_FATAL(
      zkl_name_find(s2, top, 1000, &found, &n, &truncated), ZKL_OK);
  CU_ASSERT_EQUAL(n, 1);
  if (n == 1)
    CU_ASSERT_STRING_EQUAL(found[0], name);
  zkl_name_find_free(found, n);
  CU_ASSERT_EQUAL(zkl_name_break(s2, name, NULL, 0, NULL, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(zkl_rwlock_read(rw), 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_read(rw)), ZKL_OK);
  zkl_rwlock_free(rw);
  zkl_lock_free(l);
  /* semaphore: its places under the full path */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l, s, other, 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  snprintf(want, sizeof want, "%s/leases/", other);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  CU_ASSERT(strncmp(node, want, strlen(want)) == 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  /* election */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&l, s, other, "me"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_get_leader(s2, other, want, sizeof want, NULL),
                  ZKL_OK);
  CU_ASSERT_STRING_EQUAL(want, "me");
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  /* a multi-lock of two full paths */
  names[0] = name;
  names[1] = third;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_multi(&m, s, names, 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(m, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_children(name), 1);
  CU_ASSERT_EQUAL(zkt_children(third), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(m), ZKL_OK);
  zkl_lock_free(m);
  for (i = 0; i < 2; i++)
    zkt_assert_parent_empty(names[i]);
  snprintf(want, sizeof want, "/locks/%s", name + 1);
  CU_ASSERT_EQUAL(zkt_children(want), -1); /* nothing under /locks */
  zkl_session_close(s2, NULL);
  zkl_session_close(s, NULL);
}

static void test_reentrant(void) {
  char name[64], path[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  int64_t t1 = 0, t2 = 0;
  struct Stat st;
  zkt_name(name, sizeof name, "reentrant");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &t1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, &t2), ZKL_OK);
  CU_ASSERT_EQUAL(t1, t2);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(stat_of(path, &st), ZOK); /* one hold left */
  CU_ASSERT_EQUAL(zkl_lock_token(l), t1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(stat_of(path, &st), ZNONODE);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

static void test_exclusion_one_session(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  int64_t ta = 0, tb = 0;
  zkt_name(name, sizeof name, "same-session");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, &ta), ZKL_OK);
  /* Two objects on one session are two contenders. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 0, &tb), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkt_children(parent), 1); /* b's node is already gone */
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 200, &tb), ZKL_ETIMEDOUT);
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 0, &tb), ZKL_OK);
  CU_ASSERT(tb > ta);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

typedef struct {
  zkl_lock *l;
  int timeout_ms;
  int rc;
  int64_t token;
  zkt_counter done;
} acquirer;

static void *acquire_thread(void *arg) {
  acquirer *a = arg;
  a->rc = zkl_lock_acquire(a->l, a->timeout_ms, &a->token);
  zkt_counter_add(&a->done, 1);
  return NULL;
}

static void start_acquirer(acquirer *a, pthread_t *t, zkl_lock *l,
                           int timeout_ms) {
  a->l = l;
  a->timeout_ms = timeout_ms;
  a->rc = 1;
  zkt_counter_init(&a->done);
  CU_ASSERT_FATAL(pthread_create(t, NULL, acquire_thread, a) == 0);
}

static void test_exclusion_two_sessions(void) {
  char name[64], parent[512];
  zkl_session *s1 = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  int64_t ta = 0;
  acquirer w;
  pthread_t t;
  zkt_name(name, sizeof name, "two-sessions");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, &ta), ZKL_OK);
  start_acquirer(&w, &t, b, -1);
  /* b is queued (its node exists) but must not get the lock while a holds
   * it: its result is still unset once its node is there. */
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_counter_get(&w.done), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w.done, 1, T_WAIT), 1);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(w.rc, ZKL_OK);
  CU_ASSERT(w.token > ta);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s1);
  zkt_assert_quiet(s2);
  zkl_session_close(s1, NULL);
  zkl_session_close(s2, NULL);
  zkt_assert_parent_empty(name);
}

static void test_timeout(void) {
  char name[64], parent[512];
  zkl_session *s1 = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  int64_t t0;
  zkt_name(name, sizeof name, "timeout");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 300, NULL), ZKL_ETIMEDOUT);
  CU_ASSERT(zkt_now_ms() - t0 >= 300); /* never before the deadline */
  /* The waiter's node and its watch are gone. */
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  zkt_assert_quiet(s2);
  CU_ASSERT_EQUAL(zkl_lock_token(b), 0);
  /* and it can try again */
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 300, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkl_session_close(s1, NULL);
  zkl_session_close(s2, NULL);
  zkt_assert_parent_empty(name);
}

static void test_cancel_blocking(void) {
  char name[64], parent[512];
  zkl_session *s1 = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  acquirer w;
  pthread_t t;
  zkt_name(name, sizeof name, "cancel");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s2, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b), ZKL_EIDLE);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  start_acquirer(&w, &t, b, -1);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  /* A second acquire of the same object while one is under way. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(b, 0, NULL), ZKL_EINPROGRESS);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w.done, 1, T_WAIT), 1);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(w.rc, ZKL_ECANCELED);
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  zkt_assert_quiet(s2);
  CU_ASSERT_EQUAL(zkl_lock_cancel(b), ZKL_EIDLE);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkl_session_close(s1, NULL);
  zkl_session_close(s2, NULL);
  zkt_assert_parent_empty(name);
}

static void test_tokens_increase(void) {
  char name[64];
  zkl_session *s1 = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *l[2];
  int64_t last = 0, tok;
  int i;
  zkt_name(name, sizeof name, "tokens");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[1], s2, name), ZKL_OK);
  for (i = 0; i < 20; i++) {
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l[i % 2], -1, &tok), ZKL_OK);
    CU_ASSERT(tok > last);
    last = tok;
    CU_ASSERT_EQUAL(zkl_lock_release(l[i % 2]), ZKL_OK);
  }
  zkl_lock_free(l[0]);
  zkl_lock_free(l[1]);
  zkl_session_close(s1, NULL);
  zkl_session_close(s2, NULL);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------------ bad input */

/* The children of /locks (none when it does not exist). */
static void list_locks(struct String_vector *sv) {
  int rc = zoo_get_children(zkt_observer(), "/locks", 0, sv);
  zkt_check(rc == ZOK || rc == ZNONODE,
            "the observer could not list /locks: %s", zerror(rc));
}

static void test_bad_input(void) {
  static const char *bad[] = {"",     "/",    "a/",   "a//b",  ".",
                              "..",   "a/..", "a/./b", "a\001", "a\nb",
                              "\xff", NULL};
  zkl_session *s = zkt_session(T_SESSION), *dummy = NULL;
  zkl_lock *l = NULL;
  char big[300], buf[8];
  const char **p;
  struct String_vector was = {0}, now = {0};
  int before = zkt_children("/locks"), i, j;
  list_locks(&was);
  for (p = bad; *p; p++)
    CU_ASSERT_EQUAL(zkl_lock_new(&l, s, *p), ZKL_EINVAL);
  memset(big, 'x', 256);
  big[256] = '\0';
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, big), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, s, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(NULL, s, "x"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&l, NULL, "x"), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(l);
  CU_ASSERT_EQUAL(zkt_open(NULL, zkt_hosts(), 1000, 0, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_open(&dummy, NULL, 1000, 0, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_open(&dummy, zkt_hosts(), -1, 0, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_wrap(&dummy, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_open(&dummy, NULL), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(dummy);
  CU_ASSERT_EQUAL(zkl_lock_acquire(NULL, -1, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_release(NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_cancel(NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(NULL, -1, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_release_async(NULL, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_token(NULL), 0);
  CU_ASSERT_PTR_NULL(zkl_lock_name(NULL));
  zkl_lock_free(NULL);
  zkl_session_close(NULL, NULL);
  zkl_lock_on_lost(NULL, NULL, NULL);

  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, "valid-but-unused"), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -2, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l, -1, NULL, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_release_async(l, NULL, NULL), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_EIDLE);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, NULL, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, buf, sizeof buf), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, buf, sizeof buf), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  /* Nothing of the bad names reached ZooKeeper: /locks has one child at
   * most that it did not have before, valid-but-unused. (The count may
   * also fall: the server reaps the empty containers of earlier tests.) */
  CU_ASSERT(zkt_children("/locks") <= (before < 0 ? 0 : before) + 1);
  list_locks(&now);
  for (i = 0; i < now.count; i++) {
    for (j = 0; j < was.count && strcmp(was.data[j], now.data[i]) != 0; j++)
      ;
    if (j == was.count)
      zkt_check(strcmp(now.data[i], "valid-but-unused") == 0,
                "only valid-but-unused is new in /locks, not %s", now.data[i]);
  }
  deallocate_String_vector(&was);
  deallocate_String_vector(&now);
  CU_ASSERT_EQUAL(zkt_children("/locks/x"), -1);
  zkl_session_close(s, NULL);
}

/* --------------------------------------------------- the recipe's corners */

/* The hook runs on the completion thread: it records (under hook_calls'
 * mutex, before counting the call) and the test thread asserts. */
static char hook_victim[512];
static zkt_counter hook_calls;
static int hook_delete_rc; /* of the victim's deletion; 1: not deleted */

static void hook_init(const char *victim) {
  zkt_counter_init(&hook_calls);
  pthread_mutex_lock(&hook_calls.mu);
  snprintf(hook_victim, sizeof hook_victim, "%s", victim);
  hook_delete_rc = 1;
  pthread_mutex_unlock(&hook_calls.mu);
}

static void delete_pred_once(const char *pred_path) {
  pthread_mutex_lock(&hook_calls.mu);
  if (hook_victim[0] && strcmp(pred_path, hook_victim) == 0) {
    /* On the completion thread, under the library's lock: a synchronous
     * call on another handle is fine here. */
    hook_delete_rc = zoo_delete(zkt_observer(), hook_victim, -1);
    hook_victim[0] = '\0';
  }
  pthread_mutex_unlock(&hook_calls.mu);
  zkt_counter_add(&hook_calls, 1);
}

static int hook_rc(void) {
  int rc;
  pthread_mutex_lock(&hook_calls.mu);
  rc = hook_delete_rc;
  pthread_mutex_unlock(&hook_calls.mu);
  return rc;
}

/* Whether the server has a watch on path (its "wchp" answer): 1 or 0;
 * -1 when it could not be asked (a failure of the test), or, with
 * ZKL_TEST_HOSTS, when there is no server of ours to ask (then NO_WCHP). */
#define NO_WCHP (-2)
static int server_has_watch_on(const char *path) {
  char cmd[1024], line[1024];
  FILE *p;
  int found = 0, lines = 0;
  if (!zkt_zkdir())
    return NO_WCHP;
  snprintf(cmd, sizeof cmd, "'%s/tests/zkserver' 4lw '%s' 1 wchp",
           ZKL_TEST_SRCDIR, zkt_zkdir());
  p = popen(cmd, "r");
  if (!p)
    return -1;
  while (fgets(line, sizeof line, p)) {
    lines++;
    if (strncmp(line, path, strlen(path)) == 0 &&
        (line[strlen(path)] == '\n' || line[strlen(path)] == '\0'))
      found = 1;
  }
  return pclose(p) == 0 && lines > 0 ? found : -1;
}

/* Asserts what the server says of a watch on path, unless it cannot be
 * asked (ZKL_TEST_HOSTS). */
static void assert_watch(const char *path, int want) {
  int has = server_has_watch_on(path);
  if (has == NO_WCHP)
    printf("(no server of our own: the watch on %s is not checked) ", path);
  else
    zkt_check(has == want, "the server %s a watch on %s (wchp said %d)",
              want ? "has" : "has no", path, has);
}

/* Rule 3: the predecessor goes away between the listing and the watch. It
 * was the lowest node, so the waiter holds the lock at once; no watch is
 * left on the missing node. */
static void test_pred_vanishes_lowest(void) {
  char name[64], holder[512], mine[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkl_debug_counts before, after;
  zkt_name(name, sizeof name, "vanish-lowest");
  foreign_node(name, holder, sizeof holder);
  hook_init(holder);
  zkl__hook_before_watch = delete_pred_once;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl__debug_counts(s, &before);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 5000, NULL), ZKL_OK);
  zkl__debug_counts(s, &after);
  zkl__hook_before_watch = NULL;
  CU_ASSERT_EQUAL(zkt_counter_get(&hook_calls), 1);
  CU_ASSERT_EQUAL(hook_rc(), ZOK); /* it ran and deleted */
  /* granted without a second listing */
  CU_ASSERT_EQUAL(after.sent[ZKL_RQ_LIST] - before.sent[ZKL_RQ_LIST], 1);
  assert_watch(holder, 0);
  /* and the server's answer is read right: the holder's own node has
   * its data watch, once nothing is on its way any more */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, T_WAIT), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, mine, sizeof mine), ZKL_OK);
  assert_watch(mine, 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Rule 3 again, with a lower node left: the waiter lists again at once and
 * then waits on the remaining node only. */
static void test_pred_vanishes_not_lowest(void) {
  char name[64], first[512], second[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  acquirer w;
  pthread_t t;
  zkl_debug_counts c;
  zkt_name(name, sizeof name, "vanish-middle");
  foreign_node(name, first, sizeof first);
  foreign_node(name, second, sizeof second);
  hook_init(second);
  zkl__hook_before_watch = delete_pred_once;
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  start_acquirer(&w, &t, l, -1);
  /* The second hook call is the watch on `first`, after the relist. */
  CU_ASSERT_EQUAL(zkt_counter_wait(&hook_calls, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zkt_counter_get(&w.done), 0); /* still waiting on first */
  zkl__hook_before_watch = NULL;
  CU_ASSERT_EQUAL(hook_rc(), ZOK); /* it deleted second */
  assert_watch(second, 0);
  /* the watch on first, once it went out, is there */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, T_WAIT), 0);
  assert_watch(first, 1);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), first, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w.done, 1, T_WAIT), 1);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(w.rc, ZKL_OK);
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_LIST], 2); /* first listing + the relist */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Rule 4: a waiter whose node is deleted by someone else fails with
 * ZKL_ELOST instead of waiting forever or winning without a node. */
static void test_waiter_node_deleted(void) {
  char name[64], holder[512], mine[1100];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  acquirer w;
  pthread_t t;
  zkt_name(name, sizeof name, "waiter-deleted");
  foreign_node(name, holder, sizeof holder);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  start_acquirer(&w, &t, l, -1);
  {
    /* Its node is the child that is not the holder's (the lock itself may
     * not have read its create's answer yet). */
    char parent[512];
    struct String_vector sv = {0};
    int i;
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
    CU_ASSERT_EQUAL_FATAL(zoo_get_children(zkt_observer(), parent, 0, &sv),
                          ZOK);
    mine[0] = '\0';
    for (i = 0; i < sv.count; i++)
      if (!strstr(holder, sv.data[i]))
        snprintf(mine, sizeof mine, "%s/%s", parent, sv.data[i]);
    deallocate_String_vector(&sv);
  }
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), mine, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w.done, 1, T_WAIT), 1);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(w.rc, ZKL_ELOST);
  /* Even when the holder goes now, it does not "win". */
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), holder, -1), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  zkt_assert_quiet(s);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

static void test_holder_node_deleted(void) {
  char name[64], mine[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  int64_t t1 = 0, t2 = 0;
  zkt_rec lost;
  zkt_rec_init(&lost);
  zkt_name(name, sizeof name, "holder-deleted");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &t1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, mine, sizeof mine), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), mine, -1), ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lost.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, 0), ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST); /* told once */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, &t2), ZKL_OK);
  CU_ASSERT(t2 > t1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 1);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A hold younger than its watch_after_ms has no watch on its own node: a
 * deletion meanwhile is found by the release, which says ZKL_ELOST (and
 * runs the lost callback, once); nothing is left behind. */
static void test_young_hold_node_deleted(void) {
  char name[64], mine[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkl_debug_counts c0, c1;
  int64_t t1 = 0, t2 = 0;
  zkt_rec lost;
  zkt_rec_init(&lost);
  zkt_name(name, sizeof name, "young-deleted");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, -1), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(NULL, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 600000), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  zkl__debug_counts(s, &c0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &t1), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, mine, sizeof mine), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), mine, -1), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), t1); /* nobody told it yet */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, T_WAIT), ZKL_LOST_NODE_DELETED);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_ENOTHELD); /* told once */
  zkl__debug_counts(s, &c1);
  CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_OWN_GET] - c0.sent[ZKL_RQ_OWN_GET], 0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, &t2), ZKL_OK);
  CU_ASSERT(t2 > t1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 1);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A waiter watches its predecessor and the node before it. The third in
 * the queue, whose predecessor's predecessor is the first, needs no
 * listing after its own: the first's deletion leaves its predecessor
 * first, and that one's deletion grants it. The fourth lists again when
 * the node before its predecessor goes, while its predecessor holds, and
 * is granted when that one goes, with no listing between. */
static void test_handoff_lists_nothing(void) {
  char name[64], parent[512];
  zkl_session *s[4];
  zkl_lock *l[4];
  zkt_rec rec[4];
  zkl_debug_counts c0[4], c1;
  int i;
  zkt_name(name, sizeof name, "ahead");
  zkt_parent(parent, sizeof parent, name);
  for (i = 0; i < 4; i++) {
    s[i] = zkt_session(T_SESSION);
    zkt_rec_init(&rec[i]);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[i], s[i], name), ZKL_OK);
  }
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l[0], -1, NULL), ZKL_OK);
  for (i = 1; i < 4; i++) {
    zkl__debug_counts(s[i], &c0[i]);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire_async(l[i], -1, zkt_on_acquired, &rec[i]), ZKL_OK);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, i + 1, T_WAIT), i + 1);
    CU_ASSERT_EQUAL(zkl__debug_wait_settled(s[i], T_WAIT), 0);
    zkl__debug_counts(s[i], &c1);
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_LIST] - c0[i].sent[ZKL_RQ_LIST], 1);
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_PRED_GET] - c0[i].sent[ZKL_RQ_PRED_GET],
                    1);
    /* the second waits for the first: nothing before it to watch */
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_AHEAD_GET] - c0[i].sent[ZKL_RQ_AHEAD_GET],
                    i > 1 ? 1 : 0);
  }
  CU_ASSERT_EQUAL(zkl_lock_release(l[0]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec[1], 1, T_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l[1]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec[2], 1, T_WAIT), ZKL_OK);
  /* the fourth lists again while the third holds (after the second's
   * deletion event: wait for it) */
  {
    int64_t deadline = zkt_now_ms() + T_WAIT;
    while (zkt_now_ms() < deadline) {
      zkl__debug_counts(s[3], &c1);
      if (c1.sent[ZKL_RQ_LIST] - c0[3].sent[ZKL_RQ_LIST] >= 2)
        break;
      usleep(1000);
    }
  }
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s[3], T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec[3].calls), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l[2]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec[3], 1, T_WAIT), ZKL_OK);
  CU_ASSERT(rec[3].token > rec[2].token && rec[2].token > rec[1].token);
  CU_ASSERT_EQUAL(zkl_lock_release(l[3]), ZKL_OK);
  /* listings after each one's own: none for the second and the third,
   * one for the fourth; and none read its predecessor twice (the fourth's
   * second listing kept the watch it had) */
  for (i = 1; i < 4; i++) {
    zkl__debug_counts(s[i], &c1);
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_LIST] - c0[i].sent[ZKL_RQ_LIST],
                    i == 3 ? 2 : 1);
    CU_ASSERT_EQUAL(c1.sent[ZKL_RQ_PRED_GET] - c0[i].sent[ZKL_RQ_PRED_GET],
                    1);
  }
  for (i = 0; i < 4; i++) {
    zkl_lock_free(l[i]);
    zkt_assert_quiet(s[i]);
    zkl_session_close(s[i], NULL);
  }
  zkt_assert_parent_empty(name);
}

/* Rule 5: the parent is a container; when it is reaped between attempts
 * (here by the server itself, which checks every second in this test
 * program), the next acquire creates it again. */
static void test_container_reaped(void) {
  char name[64], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  int rc;
  zkt_name(name, sizeof name, "reaped");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, -1, 30000), -1); /* reaped */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_children(parent), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  /* and when something deletes it by hand (unless the server reaped it
   * first): the next acquire meets no parent either way */
  zkt_assert_parent_empty(name);
  rc = zoo_delete(zkt_observer(), parent, -1);
  zkt_check(rc == ZOK || rc == ZNONODE, "the observer deleted %s: %s", parent,
            zerror(rc));
  CU_ASSERT_EQUAL(zkt_children(parent), -1);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 5000, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Children that are not lock nodes do not count as contenders. */
static void test_foreign_children_ignored(void) {
  char name[64], parent[512], junk[600];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_name(name, sizeof name, "junk");
  zkt_parent(parent, sizeof parent, name);
  make_container("/locks");
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), parent, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0),
                  ZOK);
  snprintf(junk, sizeof junk, "%s/readme", parent);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), junk, "x", 1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), junk, -1), ZOK);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Issue 7, bug 4: the lock "NAME/lock-0" lives in a container named
 * "lock-0" under the parent of the lock NAME. It is not a contender of NAME
 * (it blocked NAME, and went on blocking it until the server reaped it); a
 * name segment that would really pass for a contender is refused. */
static void test_lock_like_segment(void) {
  char name[64], inner[100], parent[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *outer, *in;
  zkt_name(name, sizeof name, "nest");
  snprintf(inner, sizeof inner, "%s/lock-0", name);
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&in, s, inner), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(in, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_children(parent), 1); /* the container lock-0 */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&outer, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(outer, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(outer), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(in), ZKL_OK);
  /* the container, now empty, does not block either */
  CU_ASSERT_EQUAL(zkl_lock_acquire(outer, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(outer), ZKL_OK);
  zkl_lock_free(outer);
  zkl_lock_free(in);
  /* A segment shaped like a real node is refused, and nothing is sent. */
  snprintf(inner, sizeof inner, "%s/lock-0000000000", name);
  CU_ASSERT_EQUAL(zkl_name_check(inner), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_new(&in, s, inner), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_children(parent), 1); /* still only lock-0 */
  zkl_session_close(s, NULL);
  snprintf(inner, sizeof inner, "%s/lock-0", name);
  zkt_assert_parent_empty(inner);
}

/* ------------------------------------------------------------ security */

/* A creator-only lock: a session with other credentials (or none) can
 * neither delete the node nor change its data, nor queue; sessions with the
 * owner's credentials contend normally. */
static void test_acl_creator(void) {
  char name[64], path[512], data[512];
  zkl_session *alice = zkt_session(T_SESSION), *alice2 = zkt_session(T_SESSION);
  zkl_session *bob = zkt_session(T_SESSION), *nobody = zkt_session(T_SESSION);
  zkl_lock *la, *la2, *lb, *ln;
  zhandle_t *bz = zkl_session_handle(bob);
  int len = sizeof data;
  zkt_name(name, sizeof name, "acl");
  CU_ASSERT_EQUAL(zkl_session_add_auth(alice, "digest", "alice:secret", 12),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_add_auth(alice2, "digest", "alice:secret", 12),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_add_auth(bob, "digest", "bob:hunter2", 11),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_add_auth(NULL, "digest", "x", 1), ZKL_EINVAL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&la, alice, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_acl(la, 7), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_set_acl(la, ZKL_ACL_CREATOR), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(la, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(la, path, sizeof path), ZKL_OK);

  CU_ASSERT_EQUAL(zoo_delete(bz, path, -1), ZNOAUTH);
  CU_ASSERT_EQUAL(zoo_set(bz, path, "x", 1, -1), ZNOAUTH);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZNOAUTH);
  CU_ASSERT_EQUAL(zoo_get(bz, path, 0, data, &len, NULL), ZOK); /* reads */
  /* Bob cannot even queue, and leaves nothing behind trying. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&lb, bob, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(lb, 0, NULL), ZNOAUTH);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_children(parent), 1);
  }

  /* Another session with Alice's credentials contends as usual. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&la2, alice2, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_acl(la2, ZKL_ACL_CREATOR), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(la2, 0, NULL), ZKL_EBUSY);
  CU_ASSERT_EQUAL(zkl_lock_release(la), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(la2, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(la2), ZKL_OK);

  /* Creator-only without credentials: the server's refusal, not a hang or
   * a misleading ZNONODE. */
  {
    char other[64];
    zkt_name(other, sizeof other, "acl-noauth");
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&ln, nobody, other), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_acl(ln, ZKL_ACL_CREATOR), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(ln, 0, NULL), ZINVALIDACL);
    zkl_lock_free(ln);
  }
  zkl_lock_free(la);
  zkl_lock_free(la2);
  zkl_lock_free(lb);
  zkt_assert_quiet(alice);
  zkt_assert_quiet(alice2);
  zkt_assert_quiet(bob);
  zkt_assert_quiet(nobody);
  zkl_session_close(alice, NULL);
  zkl_session_close(alice2, NULL);
  zkl_session_close(bob, NULL);
  zkl_session_close(nobody, NULL);
  zkt_assert_parent_empty(name);
}

/* ---------------------------------------------------------- round trips */

/* The request counts behind the round-trip claims: an uncontended acquire
 * sends create + listing + own-node watch back to back (one round trip),
 * a release one delete, and a waiter behind the lowest node is granted on
 * its deletion with no further request. */
static void test_request_counts(void) {
  char name[64], parent[512];
  zkl_session *s1 = zkt_session(T_SESSION), *s2 = zkt_session(T_SESSION);
  zkl_lock *a, *b;
  zkl_debug_counts c0, c1, w0, w1;
  unsigned want[ZKL_RQ_KINDS];
  acquirer w;
  pthread_t t;
  zkt_name(name, sizeof name, "rtt");
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&a, s1, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&b, s2, name), ZKL_OK);
  /* first use: parents are missing, created in a second pipelined batch */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  zkt_assert_quiet(s1);

  zkl__debug_counts(s1, &c0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  zkt_assert_quiet(s1);
  zkl__debug_counts(s1, &c1);
  /* A hold shorter than its watch_after_ms: three requests, no watch on
   * its own node. */
  memset(want, 0, sizeof want);
  want[ZKL_RQ_CREATE] = want[ZKL_RQ_LIST] = want[ZKL_RQ_RELEASE] = 1;
  zkt_assert_sent(c0.sent, c1.sent, want);

  /* Watched from the grant (watch_after_ms 0): one read more, sent behind
   * the listing's answer, in no round trip of its own. */
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(a, 0), ZKL_OK);
  zkl__debug_counts(s1, &c0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  zkt_assert_quiet(s1);
  zkl__debug_counts(s1, &c1);
  want[ZKL_RQ_OWN_GET] = 1;
  zkt_assert_sent(c0.sent, c1.sent, want);
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(a, ZKL_WATCH_AFTER_DEFAULT_MS),
                  ZKL_OK);

  /* Handoff: b waits behind a (the lowest node) and is granted on a's
   * delete with nothing but its own create, listing and watches. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(a, -1, NULL), ZKL_OK);
  zkl__debug_counts(s2, &w0);
  start_acquirer(&w, &t, b, -1);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  /* b's pipelined listing must have seen a's node, and b be watching it,
   * before a leaves: otherwise b is granted on a listing without a and
   * reads no predecessor (0, not 1). */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s2, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(a), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&w.done, 1, T_WAIT), 1);
  pthread_join(t, NULL);
  CU_ASSERT_EQUAL(w.rc, ZKL_OK);
  zkl__debug_counts(s2, &w1);
  CU_ASSERT_EQUAL(w1.sent[ZKL_RQ_LIST] - w0.sent[ZKL_RQ_LIST], 1);
  CU_ASSERT_EQUAL(w1.sent[ZKL_RQ_PRED_GET] - w0.sent[ZKL_RQ_PRED_GET], 1);
  /* a waiter watches its own node from the start of its wait */
  CU_ASSERT_EQUAL(w1.sent[ZKL_RQ_OWN_GET] - w0.sent[ZKL_RQ_OWN_GET], 1);
  CU_ASSERT_EQUAL(zkl_lock_release(b), ZKL_OK);
  zkl_lock_free(a);
  zkl_lock_free(b);
  zkt_assert_quiet(s1);
  zkt_assert_quiet(s2);
  zkl_session_close(s1, NULL);
  zkl_session_close(s2, NULL);
  zkt_assert_parent_empty(name);
}

int main(void) {
  static const zkt_test tests[] = {
      {"acquire: the token is the czxid of its own ephemeral node, which names its holder", test_acquire_release},
      {"a nested name a/b/c queues under /locks/a/b/c", test_nested_name},
      {"a full path /a/b is its own znode, for every kind",
       test_full_path_every_kind},
      {"reentrant holds", test_reentrant},
      {"two locks on one session are two contenders: EBUSY, then a higher token", test_exclusion_one_session},
      {"two sessions exclude each other", test_exclusion_two_sessions},
      {"timeout cleans up", test_timeout},
      {"cancel ends a blocking acquire with ZKL_ECANCELED and takes its node away", test_cancel_blocking},
      {"tokens strictly increase", test_tokens_increase},
      {"bad names and arguments are refused with ZKL_EINVAL and reach no server",
       test_bad_input},
      {"a predecessor gone before its watch: the waiter, now lowest, holds at once", test_pred_vanishes_lowest},
      {"predecessor vanishes (not lowest)", test_pred_vanishes_not_lowest},
      {"a waiter whose node is deleted fails with ZKL_ELOST", test_waiter_node_deleted},
      {"a holder whose node is deleted is told NODE_DELETED once, and can acquire again", test_holder_node_deleted},
      {"a young hold's node deleted", test_young_hold_node_deleted},
      {"a reaped container parent is made again by the next acquire", test_container_reaped},
      {"non-lock children ignored", test_foreign_children_ignored},
      {"a lock-like name segment is no contender of the name above it", test_lock_like_segment},
      {"creator-only ACL", test_acl_creator},
      {"request counts", test_request_counts},
      {"a handoff lists nothing", test_handoff_lists_nothing},
      {NULL, NULL}};
  /* Reap empty containers quickly, so that rule 1 of docs/recipe.md
   * (parents reaped between attempts) is tested for real. */
  zkt_server_java_opts("-Dznode.container.checkIntervalMs=500");
  return zkt_main("lock", tests);
}
