/* SPDX-License-Identifier: Apache-2.0 */
/* test_faults.c - the lock when the connection misbehaves, through
 * tests/faultproxy: lost create replies are recovered without a second node
 * (rule 6 of docs/recipe.md), deletes that fail on a lost connection are
 * retried after the reconnect (rule 7), and a short disconnect keeps held
 * locks and waits. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_WAIT 15000
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"
#define OP_CREATE2 15 /* what the lock's zoo_acreate2 sends */
#define OP_DELETE 2


/* Children of the lock NAME's parent (zkt_children: -1 when it is gone,
 * and an observer error fails the test, at the caller's line). */
#define children_of(name) children_of_at((name), __FILE__, __LINE__)
static int children_of_at(const char *name, const char *file, int line) {
  char parent[512];
  zkt_parent(parent, sizeof parent, name);
  return zkt_children_at(parent, file, line);
}

/* Rule 2: the create went through, its reply was lost (the connection was
 * reset right after the request). The lock finds its node by its id after
 * the reconnect and adopts it: no second create, one node. */
static void test_create_reply_lost(void) {
  char name[64], path[512];
  zkt_proxied p;
  zkl_lock *l;
  zkl_debug_counts c0, c;
  int64_t token = 0;
  struct Stat st;
  zkt_proxied_open(&p, 5000);
  zkt_name(name, sizeof name, "lost-create");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  /* first use creates the parents; then lose the reply of the next create */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl__debug_counts(p.s, &c0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, T_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  zkl__debug_counts(p.s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CREATE] - c0.sent[ZKL_RQ_CREATE], 1);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_RECOVER_GET], 1); /* adopted, not re-made */
  CU_ASSERT_EQUAL(children_of(name), 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), path, 0, &st), ZOK);
  CU_ASSERT_EQUAL(st.czxid, token); /* the token of the adopted node */
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}


/* The same in kazoo's layout (zkl_lock_set_layout): the node that the lost
 * reply named, "_c_<id>-__lock__<seq>", is found by the same id and
 * adopted; no second create, one node, with kazoo's marker. */
static void test_create_reply_lost_kazoo_layout(void) {
  char name[64], path[512];
  zkt_proxied p;
  zkl_lock *l;
  zkl_debug_counts c0, c;
  int64_t token = 0;
  struct Stat st;
  const char *last;
  zkt_proxied_open(&p, 5000);
  zkt_name(name, sizeof name, "lost-create-kazoo");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_set_layout(l, ZKL_LAYOUT_KAZOO), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl__debug_counts(p.s, &c0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, T_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  zkl__debug_counts(p.s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CREATE] - c0.sent[ZKL_RQ_CREATE], 1);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_RECOVER_GET], 1); /* adopted, not re-made */
  CU_ASSERT_EQUAL(children_of(name), 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  last = strrchr(path, '/') + 1;
  CU_ASSERT(strncmp(last, "_c_", 3) == 0 && strstr(last, "-__lock__"));
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), path, 0, &st), ZOK);
  CU_ASSERT_EQUAL(st.czxid, token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* The same while another session holds the lock: the recovered waiter
 * queues behind it and gets the lock when it is released. */
static void test_create_reply_lost_waiting(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder h;
  zkl_lock *l;
  zkl_debug_counts c;
  zkt_rec a;
  zkt_proxied_open(&p, 5000);
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "lost-create-wait");
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset-after-op 15"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 0);
  zkt_unhold(&h);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT(a.token > h.token);
  CU_ASSERT_EQUAL(children_of(name), 1);
  zkl__debug_counts(p.s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CREATE], 1);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_RECOVER_GET], 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* The create's reply is swallowed and the connection stays up: the client
 * gives up on it by its own timer (ZOPERATIONTIMEOUT), reconnects in the
 * same session, and the lock adopts the node it made. */
static void test_create_reply_timed_out(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkl_debug_counts c;
  zkt_rec a;
  zkt_proxied_open(&p, 6000);
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "lost-create-timeout");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  /* first use makes the parents, so the lost create is a real one */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop-after-op 15"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT_EQUAL(children_of(name), 1);
  zkl__debug_counts(p.s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_RECOVER_GET], 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* Rule 6: a cancel whose delete is lost with the connection. The callback
 * comes when the client gives the request up; the node stays until the
 * session reconnects, and is deleted then. */
static void test_cancel_delete_lost(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder h;
  zkl_lock *l;
  zkt_rec a;
  zkt_proxied_open(&p, 6000); /* noticed after 4 s; 2 s left to heal */
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "cancel-lost");
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  }
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop"), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK); /* the delete goes nowhere */
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECANCELED);
  CU_ASSERT_EQUAL(children_of(name), 2); /* not deleted yet */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, T_WAIT), 1);
  }
  zkt_assert_quiet(p.s);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* Rule 6 with the session already disconnected (connections refused): the
 * cancel completes at once and the delete waits for the reconnect. */
static void test_cancel_while_disconnected(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder h;
  zkl_lock *l;
  zkt_rec a;
  zkt_proxied_open(&p, 5000);
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "cancel-offline");
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  }
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECANCELED);
  CU_ASSERT_EQUAL(children_of(name), 2);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, T_WAIT), 1);
  }
  zkt_assert_quiet(p.s);
  zkt_unhold(&h);
  zkl_lock_free(l);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* A cancelled attempt whose watch on its own node lost its reply, in a
 * session that expires before it can reconnect: nothing of it may stay
 * waiting for a reconnect that will never come. (It did: the attempt, its
 * lock and the session leaked; found by a stress run under ASan.) */
static void test_own_watch_lost_then_expired(void) {
  char name[64];
  zkt_proxied p;
  zkt_holder h;
  zkl_lock *l;
  zkt_rec a;
  zkt_proxied_open(&p, 4000);
  zkt_rec_init(&a);
  zkt_name(name, sizeof name, "own-watch-expired");
  zkt_hold(&h, name); /* the parents exist: the first getData is the own watch */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop-after-op 4"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_ECANCELED);
  /* the client gives the connection up: the getData fails */
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_expire(p.s), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  /* expired (it said "dead for any reason": 0 is a timeout) */
  CU_ASSERT_EQUAL(zkl__debug_wait_dead(p.s, T_WAIT), ZKL_EEXPIRED);
  zkt_assert_quiet(p.s); /* nothing parked, nothing pending */
  zkl_lock_free(l);
  zkt_proxied_close(&p);
  zkt_unhold(&h);
  zkt_assert_parent_empty(name);
}

/* Release while disconnected returns at once; the node goes at the
 * reconnect. */
static void test_release_while_disconnected(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkt_proxied_open(&p, 5000);
  zkt_name(name, sizeof name, "release-offline");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), 0);
  CU_ASSERT_EQUAL(children_of(name), 1);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  zkt_assert_parent_empty(name);
  zkt_assert_quiet(p.s);
  zkl_lock_free(l);
  zkt_proxied_close(&p);
}

/* Starts a try-once acquire and returns its status, from the call or from
 * its callback, which must come within the bound (ZKT_NO_CALL if it does
 * not). */
static int try_once(zkl_lock *l) {
  static zkt_rec a; /* a callback that comes too late still finds it */
  int rc;
  zkt_rec_init(&a);
  rc = zkl_lock_acquire_async(l, 0, zkt_on_acquired, &a);
  if (rc != ZKL_OK)
    return rc;
  return zkt_rec_wait(&a, 1, T_WAIT); /* ZKT_NO_CALL if none came */
}

/* Issue 7, bug 1: a try-once acquire is one exchange with the server. With
 * no connection it fails at once with ZKL_ECONNECT (it waited for the
 * reconnect, as long as the outage lasted), and sends nothing. */
static void test_try_once_disconnected(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkl_debug_counts c0, c;
  zkt_proxied_open(&p, 5000);
  zkt_name(name, sizeof name, "try-offline");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  zkl__debug_counts(p.s, &c0);
  CU_ASSERT_EQUAL(try_once(l), ZKL_ECONNECT);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECONNECT);
  zkl__debug_counts(p.s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CREATE], c0.sent[ZKL_RQ_CREATE]);
  CU_ASSERT_EQUAL(c.parked, 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, T_WAIT), 0);
  /* Connected again, a try works as before. */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
}

/* The same when the connection swallows the exchange: the create reaches
 * the server, nothing comes back. The try fails with ZKL_ECONNECT when the
 * client gives the connection up (2/3 of the session timeout), without
 * waiting for a reconnect; the node its create made is deleted once the
 * session reconnects. */
static void test_try_once_swallowed(void) {
  char name[64];
  zkt_proxied p;
  zkl_lock *l;
  zkt_proxied_open(&p, 6000);
  zkt_name(name, sizeof name, "try-swallowed");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  /* first use makes the parents, so the swallowed create is a real one */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "drop-after-op 15"), 0);
  CU_ASSERT_EQUAL(try_once(l), ZKL_ECONNECT);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(p.px, T_WAIT), 0);
  CU_ASSERT_EQUAL(children_of(name), 1); /* made, and still there */
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "pass"), 0);
  zkt_assert_parent_empty(name);
  zkl_lock_free(l);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
}

/* A disconnect the session survives: the holder still holds, nothing is
 * reported lost; a waiter's watch is re-armed by the client and the
 * predecessor's deletion during the outage reaches it afterwards. */
static void test_short_disconnect(void) {
  char name[64], wname[64];
  zkt_proxied p;
  zkt_holder h;
  zkl_lock *l, *w;
  int64_t token = 0;
  zkt_rec a, lost;
  zkt_proxied_open(&p, 5000);
  zkt_rec_init(&a);
  zkt_rec_init(&lost);
  zkt_name(name, sizeof name, "survive-held");
  zkt_name(wname, sizeof wname, "survive-wait");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, p.s, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, -1, &token), ZKL_OK);
  zkt_hold(&h, wname);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&w, p.s, wname), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(w, -1, zkt_on_acquired, &a),
                        ZKL_OK);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, wname);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  }
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "reset"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, false, T_WAIT), 0);
  zkt_unhold(&h); /* the predecessor goes while the waiter is cut off */
  CU_ASSERT_EQUAL(zkt_counter_get(&a.calls), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(p.px, "accept"), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(p.s, true, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&a.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(a.rc, ZKL_OK);
  CU_ASSERT(a.token > h.token);
  CU_ASSERT_EQUAL(zkl_lock_token(l), token);
  CU_ASSERT_EQUAL(children_of(name), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(w), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 0);
  zkl_lock_free(l);
  zkl_lock_free(w);
  zkt_assert_quiet(p.s);
  zkt_proxied_close(&p);
  zkt_assert_parent_empty(name);
  zkt_assert_parent_empty(wname);
}

int main(void) {
  static const zkt_test tests[] = {
      {"create reply lost", test_create_reply_lost},
      {"create reply lost in kazoo's layout", test_create_reply_lost_kazoo_layout},
      {"create reply lost while waiting", test_create_reply_lost_waiting},
      {"a create whose reply timed out is adopted after the reconnect", test_create_reply_timed_out},
      {"cancel: delete lost, retried", test_cancel_delete_lost},
      {"a cancel while disconnected completes at once; the delete waits for the reconnect", test_cancel_while_disconnected},
      {"a release while disconnected returns at once; the node goes at the reconnect", test_release_while_disconnected},
      {"own watch lost, then expired", test_own_watch_lost_then_expired},
      {"short disconnect keeps locks", test_short_disconnect},
      {"try-once while disconnected", test_try_once_disconnected},
      {"try-once exchange swallowed", test_try_once_swallowed},
      {NULL, NULL}};
  return zkt_main("faults", tests);
}
