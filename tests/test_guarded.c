/* SPDX-License-Identifier: Apache-2.0 */
/* test_guarded.c - what a holder does with its lock, against a real
 * ZooKeeper: guarded writes commit while the lock is held and write nothing
 * once it is not (session expired, node deleted by someone else, the lease
 * run out, a holder paused past its session), read back from a second
 * session; and revocation: asking a holder or a waiter to let go. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_SESSION 10000
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"

static const char *self_path;

/* Whether path exists, as the observer (another session) sees it. */
static bool exists(const char *path) {
  return zoo_exists(zkt_observer(), path, 0, NULL) == ZOK;
}

/* A guarded create of path and, when also is set, of also. */
static int guarded_create(zkl_lock *l, const char *path, const char *also) {
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zoo_create_op_init(&ops[0], path, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  if (also)
    zoo_create_op_init(&ops[1], also, "w", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL,
                       0);
  return zkl_lock_commit(l, also ? 2 : 1, ops, results);
}

static void target(char *buf, size_t len, const char *name, const char *what) {
  snprintf(buf, len, "/guarded-%s-%s", name, what);
}

static void test_commit_while_held(void) {
  char name[64], a[128], b[128], out[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  zkt_name(name, sizeof name, "guard-commit");
  target(a, sizeof a, name, "a");
  target(b, sizeof b, name, "b");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(guarded_create(l, a, NULL), ZKL_ENOTHELD); /* not held */
  CU_ASSERT(!exists(a));
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  /* a create whose path comes back in a buffer, and a setData */
  zoo_create_op_init(&ops[0], b, "x", 1, &ZOO_OPEN_ACL_UNSAFE, 0, out,
                     sizeof out);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), a, "0", 1, &ZOO_OPEN_ACL_UNSAFE,
                             0, NULL, 0),
                  ZOK);
  zoo_set_op_init(&ops[1], a, "1", 1, -1, NULL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, ops, results), ZKL_OK);
  CU_ASSERT_EQUAL(results[0].err, ZOK);
  CU_ASSERT_EQUAL(results[1].err, ZOK);
  CU_ASSERT_STRING_EQUAL(out, b);
  CU_ASSERT(exists(b));
  {
    char data[8];
    int len = sizeof data;
    CU_ASSERT_EQUAL(zoo_get(zkt_observer(), a, 0, data, &len, NULL), ZOK);
    CU_ASSERT(len == 1 && data[0] == '1');
  }
  /* an op that fails fails the whole: nothing written, its code returned */
  CU_ASSERT_EQUAL(guarded_create(l, a, NULL), ZNODEEXISTS);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(guarded_create(l, "/guarded-never", NULL), ZKL_ENOTHELD);
  CU_ASSERT(!exists("/guarded-never"));
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), a, -1), ZOK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), b, -1), ZOK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* Someone else deletes the holder's node: the guard fails, whether the
 * holder has heard of it yet or not, and nothing is written. */
static void test_node_deleted(void) {
  char name[64], a[128], path[512];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zkt_name(name, sizeof name, "guard-deleted");
  target(a, sizeof a, name, "a");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), path, -1), ZOK);
  CU_ASSERT_EQUAL(guarded_create(l, a, NULL), ZKL_ELOST);
  CU_ASSERT(!exists(a));
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* A commit whose answer never comes: the connection goes silent (the
 * proxy drops everything) and the client times it out, with a code of its
 * own for that, ZOPERATIONTIMEOUT. The commit says ZCONNECTIONLOSS, as
 * its page does for an answer that did not come (a CI run saw -7 right
 * after an expiry, test_session_expired). Nothing reached the server. */
static void test_commit_connection_timed_out(void) {
  char name[64], a[128];
  zkt_proxied p;
  zkl_lock *l;
  int rc;
  zkt_name(name, sizeof name, "guard-silent");
  target(a, sizeof a, name, "a");
  zkt_proxied_open(&p, 6000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop"), 0);
  rc = guarded_create(l, a, NULL);
  zkt_check(rc == ZCONNECTIONLOSS,
            "a commit whose connection timed out: %d (%s)", rc,
            zkl_strerror(rc));
  CU_ASSERT(!exists(a));
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  rc = zkl_lock_release(l); /* held still, or lost with its lease */
  CU_ASSERT(rc == ZKL_OK || rc == ZKL_ELOST);
  zkl_lock_free(l);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* The session expired (forced from a second handle): nothing is written. */
static void test_session_expired(void) {
  char name[64], a[128];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  int rc;
  zkt_name(name, sizeof name, "guard-expired");
  target(a, sizeof a, name, "a");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  /* watched from the grant, as a hold past watch_after_ms is: the node's
   * deletion by the expiry can reach it before the connection's end (a
   * younger hold may hear only of the connection, ZCONNECTIONLOSS) */
  CU_ASSERT_EQUAL(zkl_lock_set_watch_after(l, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_expire(s), 0);
  /* The expiry takes the connection down too (the second handle took the
   * session over): a write sent before the client has heard of it goes out
   * on a connection that is closing, and is answered ZCONNECTIONLOSS (seen
   * under ASan on a loaded machine). Whatever the answer, nothing is
   * written: the session was over before the write left. */
  rc = guarded_create(l, a, NULL);
  zkt_check(rc == ZKL_ELOST || rc == ZKL_EEXPIRED || rc == ZCONNECTIONLOSS,
            "a guarded write after the expiry: %d (%s)", rc, zkl_strerror(rc));
  CU_ASSERT(!exists(a));
  CU_ASSERT_NOT_EQUAL(zkl__debug_wait_dead(s, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(guarded_create(l, a, NULL), ZKL_EEXPIRED);
  CU_ASSERT(!exists(a));
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* The lease ran out while the holder was cut off: refused at once, with
 * nothing sent, even though the session may well live on. */
static zkt_counter lost_calls;
static void on_lost(zkl_lock *l, zkl_lost_reason reason, void *arg) {
  (void)l;
  (void)reason;
  (void)arg;
  zkt_counter_add(&lost_calls, 1);
}

static void test_lease_lost(void) {
  char name[64], a[128], hosts[64];
  proxyctl *px;
  zkl_session *s;
  zkl_lock *l;
  zkl_debug_counts c0, c;
  int port;
  zkt_name(name, sizeof name, "guard-lease");
  target(a, sizeof a, name, "a");
  zkt_counter_init(&lost_calls);
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  CU_ASSERT_EQUAL_FATAL(zkt_open(&s, hosts, 3000, 0, 0), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  zkl_lock_on_lost(l, on_lost, NULL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&lost_calls, 1, ZKT_WAIT), 1);
  zkl__debug_counts(s, &c0);
  CU_ASSERT_EQUAL(guarded_create(l, a, NULL), ZKL_ELOST);
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_MULTI], c0.sent[ZKL_RQ_MULTI]);
  CU_ASSERT(!exists(a));
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  proxyctl_stop(px);
  zkt_assert_parent_empty(name);
}

/* A holder paused past its session (SIGSTOP) and resumed cannot commit:
 * with the lease (told on waking) and without it (ZooKeeper refuses). The
 * child: --child NAME LEASE(0/1) WFD RFD; exit 0 refused, 1 committed, 2 a
 * step failed. */
static int paused_child(const char *name, int lease, int wfd, int rfd) {
  zkl_session *s;
  zkl_lock *l;
  char path[512], a[128], go;
  int rc;
  target(a, sizeof a, name, "paused");
  if (zkt_open(&s, zkt_hosts(), 2000, 0, 0) != ZKL_OK ||
      (!lease && zkl_session_set_lease_margin(s, -1) != ZKL_OK) ||
      zkl_lock_new(&l, s, name) != ZKL_OK ||
      zkl_lock_acquire(l, ZKT_WAIT, NULL) != ZKL_OK ||
      zkl_lock_get_node_path(l, path, sizeof path) != ZKL_OK)
    return 2;
  if (write(wfd, path, strlen(path) + 1) != (ssize_t)strlen(path) + 1 ||
      read(rfd, &go, 1) != 1)
    return 2;
  rc = guarded_create(l, a, NULL);
  printf("    (lease %s: %s) ", lease ? "on" : "off", zkl_strerror(rc));
  fflush(stdout);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  return rc == ZKL_OK ? 1 : 0;
}

static void paused_holder(int lease) {
  char name[64], path[512], a[128], lease_arg[4], wfd[16], rfd[16];
  int to_parent[2], to_child[2], status = 0;
  pid_t pid;
  ssize_t n;
  zkt_name(name, sizeof name, "guard-paused");
  target(a, sizeof a, name, "paused");
  CU_ASSERT_FATAL(pipe(to_parent) == 0 && pipe(to_child) == 0);
  snprintf(lease_arg, sizeof lease_arg, "%d", lease);
  snprintf(wfd, sizeof wfd, "%d", to_parent[1]);
  snprintf(rfd, sizeof rfd, "%d", to_child[0]);
  CU_ASSERT_FATAL(setenv("ZKL_TEST_HOSTS", zkt_hosts(), 1) == 0);
  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    execl(self_path, "test_guarded", "--child", name, lease_arg, wfd, rfd,
          (char *)NULL);
    _exit(127);
  }
  CU_ASSERT_FATAL(pid > 0);
  close(to_parent[1]);
  close(to_child[0]);
  n = read(to_parent[0], path, sizeof path);
  CU_ASSERT_FATAL(n > 0 && path[n - 1] == '\0');
  kill(pid, SIGSTOP);
  /* its session expires on the server, and its node with it */
  CU_ASSERT_EQUAL(zkt_wait_absent(path, ZKT_WAIT), 0);
  kill(pid, SIGCONT);
  CU_ASSERT_EQUAL(write(to_child[1], "g", 1), 1);
  CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
  CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CU_ASSERT(!exists(a));
  close(to_parent[0]);
  close(to_child[1]);
  zkt_assert_parent_empty(name);
}

static void test_paused_holder_lease(void) { paused_holder(1); }
static void test_paused_holder_no_lease(void) { paused_holder(0); }

static void test_write_side_and_async(void) {
  char name[64], a[128];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_rwlock *rw;
  zoo_op_t op;
  zoo_op_result_t result;
  zkt_rec rec;
  zkt_name(name, sizeof name, "guard-rw");
  target(a, sizeof a, name, "a");
  zkt_rec_init(&rec);
  CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&rw, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(zkl_rwlock_write(rw), 0, NULL),
                        ZKL_OK);
  zoo_create_op_init(&op, a, "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(zkl_rwlock_write(rw), 1, &op, &result,
                                        zkt_on_released, &rec),
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT(exists(a));
  /* not held: refused at the call, the callback never runs */
  CU_ASSERT_EQUAL(zkl_lock_commit_async(zkl_rwlock_read(rw), 1, &op, &result,
                                        zkt_on_released, &rec),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_lock_release(zkl_rwlock_write(rw)), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), a, -1), ZOK);
  zkl_rwlock_free(rw);
  zkt_assert_quiet(s);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 1);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

static void test_bad_input(void) {
  char name[64];
  zkl_session *s = zkt_session(T_SESSION);
  zkl_lock *l;
  zoo_op_t op;
  zoo_op_result_t result;
  zkt_name(name, sizeof name, "guard-bad");
  zoo_create_op_init(&op, "/guarded-bad", "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0,
                     NULL, 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_commit(NULL, 1, &op, &result), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, NULL, &result), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 1, &op, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, 0, &op, &result), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit(l, ZKL_COMMIT_OPS_MAX + 1, &op, &result),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_commit_async(l, 1, &op, &result, NULL, NULL),
                  ZKL_EINVAL);
  /* A path ZooKeeper refuses, before a good op: refused before anything is
   * sent (the C client, given these, frees a stale pointer for the op
   * after the bad one: ASan sees it at once). */
  {
    static const char *const bad[] = {"guarded-bad", "/guarded-bad/",
                                      "/a//b",       "/a/./b",
                                      "/a/..",       "/a\001b"};
    zoo_op_t two[2];
    zoo_op_result_t res[2];
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      zoo_create_op_init(&two[0], bad[i], "v", 1, &ZOO_OPEN_ACL_UNSAFE, 0,
                         NULL, 0);
      two[1] = op;
      CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res), ZBADARGUMENTS);
      zoo_delete_op_init(&two[0], bad[i], -1);
      CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res), ZBADARGUMENTS);
    }
    /* a trailing '/' is a sequential create's prefix: good */
    zoo_create_op_init(&two[0], "/guarded-bad-seq/", "v", 1,
                       &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL, NULL,
                       0);
    zoo_check_op_init(&two[1], "/guarded-bad-seq", 0);
    CU_ASSERT_EQUAL(zkl_lock_commit(l, 2, two, res), ZNONODE);
  }
  CU_ASSERT(!exists("/guarded-bad"));
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------------------ revocation */

static void on_revoke(zkl_lock *l, void *arg) {
  zkt_on_released(l, ZKL_OK, arg);
}

static void test_revoke(void) {
  char name[64], parent[512], path[512];
  zkl_session *s = zkt_session(T_SESSION), *asker = zkt_session(T_SESSION);
  zkl_lock *holder, *waiter;
  zkt_rec held, waited, rh, rw;
  zkt_name(name, sizeof name, "revoke");
  zkt_parent(parent, sizeof parent, name);
  zkt_rec_init(&held);
  zkt_rec_init(&waited);
  zkt_rec_init(&rh);
  zkt_rec_init(&rw);
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, NULL), ZKL_ENOTHELD);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&holder, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&waiter, s, name), ZKL_OK);
  zkl_lock_on_revoke(holder, on_revoke, &rh);
  zkl_lock_on_revoke(waiter, on_revoke, &rw);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(holder, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(waiter, -1, zkt_on_acquired, &waited), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, ZKT_WAIT), 2);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, ZKT_WAIT), 0);
  /* the holder, as the first in the queue */
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, NULL), ZKL_OK);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&rh, 1, ZKT_WAIT), ZKT_NO_CALL);
  CU_ASSERT_EQUAL(zkt_counter_get(&rw.calls), 0);
  /* the waiter, by its node */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(waiter, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, strrchr(path, '/') + 1), ZKL_OK);
  CU_ASSERT_NOT_EQUAL(zkt_rec_wait(&rw, 1, ZKT_WAIT), ZKT_NO_CALL);
  /* asking is not taking: the holder decides, and here lets go */
  CU_ASSERT(zkl_lock_token(holder) > 0);
  CU_ASSERT_EQUAL(zkl_lock_release(holder), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&waited, 1, ZKT_WAIT), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(waiter), ZKL_OK);
  /* a node that is not there, and bad input */
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, "_c_nobody-lock-0000000001"),
                  ZKL_ENOTHELD);
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, "", NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_revoke(asker, name, "a/b"), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_name_revoke(NULL, name, NULL), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_counter_get(&rh.calls), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&rw.calls), 1);
  zkl_lock_free(holder);
  zkl_lock_free(waiter);
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
  zkl_session_close(asker, NULL);
  zkt_assert_parent_empty(name);
}

int main(int argc, char **argv) {
  static const zkt_test tests[] = {
      {"commit while held", test_commit_while_held},
      {"a commit after another deletes the node is ZKL_ELOST and writes nothing",
       test_node_deleted},
      {"a commit whose connection times out is ZCONNECTIONLOSS",
       test_commit_connection_timed_out},
      {"a commit after the session expired writes nothing",
       test_session_expired},
      {"a commit after the lease ran out is ZKL_ELOST and sends nothing",
       test_lease_lost},
      {"a holder paused past its session cannot commit (lease)",
       test_paused_holder_lease},
      {"a holder paused past its session cannot commit (no lease)",
       test_paused_holder_no_lease},
      {"the write side, async", test_write_side_and_async},
      {"bad commit arguments are refused and write nothing", test_bad_input},
      {"revoke asks the holder, then a waiter by its node; the holder decides",
       test_revoke},
      {NULL, NULL}};
  self_path = argv[0];
  if (argc == 6 && strcmp(argv[1], "--child") == 0)
    return paused_child(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
  return zkt_main("guarded", tests);
}
