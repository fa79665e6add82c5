/* SPDX-License-Identifier: Apache-2.0 */
/* test_session.c - sessions: connect errors, expiry (rule 8 of
 * docs/recipe.md), wrapping an application's handle, closing from a
 * callback, the negotiated timeout, the log hook, and the server list where
 * there is no ensemble to follow. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define T_WAIT 15000
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"

/* A loopback port nothing listens on: bound, then closed. -1 if none
 * could be had (the test then fails: port 0 would not say "nobody
 * there"). */
static int dead_port(void) {
  struct sockaddr_in a = {0};
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
  if (fd < 0)
    return -1;
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port > 0 ? port : -1;
}

static void test_connect_errors(void) {
  zkl_session *s = NULL;
  char hosts[64];
  int64_t t0;
  int port = dead_port();
  /* Unparsable host strings: a bad argument, not an unreachable server. */
  CU_ASSERT_EQUAL(zkt_open(&s, "", 1000, 0, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_open(&s, "127.0.0.1:notaport", 1000, 0, 0),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_open(&s, ":::", 1000, 0, 0), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkt_open(&s, "127.0.0.1:2181", 1000, -1, 0),
                  ZKL_EINVAL); /* a negative connect timeout */
  CU_ASSERT_EQUAL(zkt_open(&s, "127.0.0.1:2181", 1000, 1000, 2),
                  ZKL_EINVAL); /* an unknown flag */
  {
    static char longer[ZKL_SERVERS_MAX + 16];
    size_t i;
    for (i = 0; i + 1 < sizeof longer; i++)
      longer[i] = "127.0.0.1:2181,"[i % 15];
    CU_ASSERT_EQUAL(zkt_open(&s, longer, 1000, 0, 0), ZKL_EINVAL);
  }
  /* A name that cannot resolve (the .invalid domain never does). */
  CU_ASSERT_EQUAL(zkt_open(&s, "nosuchhost.invalid:2181", 1000, 0, 0),
                  ZKL_ERESOLVE);
  /* Nobody there: an error within the bound, not a hang. */
  CU_ASSERT_FATAL(port > 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  CU_ASSERT_EQUAL(zkt_open(&s, hosts, 1000, 0, 0), ZKL_ECONNECT);
  /* The connect bound is its own, not the session timeout: a refused port
   * with a 60 s session gives up well before those 60 s. */
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_open(&s, hosts, 60000, 500, 0), ZKL_ECONNECT);
  CU_ASSERT(zkt_now_ms() - t0 < 30000);
  CU_ASSERT_PTR_NULL(s);
}

/* A port that takes connections (the kernel completes them: listen()
 * without accept()) and never says a word: a server that is there. The
 * socket stays open in *fd_out until the caller closes it. */
static int silent_port(int *fd_out) {
  struct sockaddr_in a = {0};
  socklen_t len = sizeof a;
  int port = dead_port();
  *fd_out = port > 0 ? socket(AF_INET, SOCK_STREAM, 0) : -1;
  if (*fd_out < 0)
    return -1;
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons((uint16_t)port);
  if (bind(*fd_out, (struct sockaddr *)&a, len) != 0 || listen(*fd_out, 8)) {
    close(*fd_out);
    *fd_out = -1;
    return -1;
  }
  return port;
}

/* Every server refuses: the open gives up with ZKL_ECONNECT long before
 * its connect timeout (60 s here; the test's bound is half of it). One
 * server that takes the connection and says nothing, beside a refusing
 * one: somebody is there, and the open waits its connect timeout out. */
static void test_refused_gives_up_early(void) {
  zkl_session *s = NULL;
  char hosts[128];
  int64_t t0, waited;
  int dead = dead_port(), dead2 = dead_port(), fd, silent = silent_port(&fd);
  CU_ASSERT_FATAL(dead > 0 && dead2 > 0 && silent > 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d,localhost:%d", dead, dead2);
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_open(&s, hosts, 60000, 60000, 0), ZKL_ECONNECT);
  waited = zkt_now_ms() - t0;
  zkt_check(waited < 30000, "every server refused, and the open waited %lld "
            "ms of its 60000", (long long)waited);
  CU_ASSERT_PTR_NULL(s);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d", dead, silent);
  t0 = zkt_now_ms();
  CU_ASSERT_EQUAL(zkt_open(&s, hosts, 60000, 1500, 0), ZKL_ECONNECT);
  waited = zkt_now_ms() - t0;
  zkt_check(waited >= 1500, "a server took the connection, and the open "
            "gave up after %lld ms of its 1500", (long long)waited);
  CU_ASSERT_PTR_NULL(s);
  close(fd);
}

static void test_negotiated_timeout(void) {
  zkl_session *s = zkt_session(10000);
  CU_ASSERT_EQUAL(zkl_session_timeout(s), 10000);
  zkl_session_close(s, NULL);
  /* Below the server's floor of two ticks (the test server ticks 200 ms):
   * raised by the server. */
  s = zkt_session(100);
  CU_ASSERT_EQUAL(zkl_session_timeout(s), 400);
  zkl_session_close(s, NULL);
}

/* Timeouts the ZooKeeper client never connects with (below 2 ms it times
 * the handshake out at once; from 2^30 up, twice the timeout overflows
 * its int) are clamped by the library, and the server then negotiates as
 * for any other: up to its floor, down to its ceiling (60 s here). */
static void test_timeout_clamped(void) {
  static const int asked[] = {1, 2, 1073741823, 1073741824, 2147483647};
  static const int granted[] = {400, 400, 60000, 60000, 60000};
  unsigned i;
  for (i = 0; i < sizeof asked / sizeof asked[0]; i++) {
    zkl_session *s = NULL;
    int rc = zkt_open(&s, zkt_hosts(), asked[i], 5000, 0);
    zkt_check(rc == ZKL_OK, "asking for %d ms: %s", asked[i],
              zkl_strerror(rc));
    if (rc != ZKL_OK)
      continue;
    zkt_check(zkl_session_timeout(s) == granted[i],
              "asking for %d ms: granted %d, not %d", asked[i],
              zkl_session_timeout(s), granted[i]);
    zkl_session_close(s, NULL);
  }
}

/* The held lock's lost notices and the waiting lock's acquire callback,
 * recorded for the test thread. */
static zkt_rec lost, acquired;

/* Rule 7: expiry is reported everywhere and nothing is retried. The held
 * lock's release says ZKL_ELOST once (the lock was lost), then, like every
 * other call, ZKL_EEXPIRED (the session is over: make a new one). The
 * pending acquire hears ZKL_EEXPIRED, or ZKL_ELOST when the server's
 * deletion of its node reached it before the expiry did.
 *
 * The session is made to expire the way it happens in production: its
 * client is cut off (the proxy drops every byte both ways without closing
 * anything) until the server expires it, then the network heals and the
 * client hears "expired" on reconnecting. */
static void check_expired(zkl_session *s, zkl_lock *held, zkl_lock *waiting,
                          const char *wait_name) {
  zkl_lock *extra = NULL;
  zkl_debug_counts before, c;
  zkl_lock_stats st;
  zkl_session_stats ss;
  CU_ASSERT_EQUAL(zkt_counter_wait(&lost.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&acquired.calls, 1, T_WAIT), 1);
  CU_ASSERT(acquired.rc == ZKL_EEXPIRED || acquired.rc == ZKL_ELOST);
  /* A request sent just before the expiry (a hold's own-node watch armed
   * at watch_after_ms, say) completes with it, maybe after the session is
   * known over: wait for those to come back, then nothing more may go. */
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, T_WAIT), 0);
  zkl__debug_counts(s, &before);
  CU_ASSERT_EQUAL(zkl_lock_token(held), 0);
  /* Every later call says so: the loss once, then the expiry. */
  CU_ASSERT_EQUAL(zkl_lock_release(held), ZKL_ELOST);
  CU_ASSERT_EQUAL(zkl_lock_release(held), ZKL_EEXPIRED);
  CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_EEXPIRED);
  CU_ASSERT_EQUAL(
      zkl_lock_acquire_async(waiting, -1, zkt_on_acquired, &acquired),
      ZKL_EEXPIRED);
  CU_ASSERT_EQUAL(zkl_lock_new(&extra, s, "x"), ZKL_EEXPIRED);
  CU_ASSERT_PTR_NULL(extra);
  /* The counters too (issue 24: ZKL_OK), copied all the same: the grant
   * and the loss, and the session's expiry. */
  memset(&st, 0, sizeof st);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(held, &st), ZKL_EEXPIRED);
  CU_ASSERT(st.grants == 1 && st.losses == 1);
  memset(&ss, 0, sizeof ss);
  CU_ASSERT_EQUAL(zkl_session_get_stats(s, &ss), ZKL_EEXPIRED);
  CU_ASSERT_EQUAL(ss.expiries, 1);
  /* Nothing retries on the dead handle, and no call sends anything. */
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.cleanups, 0);
  CU_ASSERT_EQUAL(c.parked, 0);
  CU_ASSERT_EQUAL(c.inflight, 0);
  CU_ASSERT(memcmp(before.sent, c.sent, sizeof c.sent) == 0);
  {
    char parent[512];
    zkt_parent(parent, sizeof parent, wait_name);
    CU_ASSERT_EQUAL(zkt_wait_children(parent, 1, T_WAIT), 1);
  }
}

static void expiry_setup(zkl_session *s, zkl_session *other, zkl_lock **held,
                         zkl_lock **waiting, zkl_lock **blocker,
                         char *held_name, char *wait_name) {
  char parent[512];
  zkt_rec_init(&lost);
  zkt_rec_init(&acquired);
  zkt_name(held_name, 64, "expiry-held");
  zkt_name(wait_name, 64, "expiry-wait");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(held, s, held_name), ZKL_OK);
  zkl_lock_on_lost(*held, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(*held, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(blocker, other, wait_name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(*blocker, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(waiting, s, wait_name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_acquire_async(*waiting, -1, zkt_on_acquired, &acquired), ZKL_OK);
  zkt_parent(parent, sizeof parent, wait_name);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
}

static void expiry_teardown(zkl_session *s, zkl_session *other,
                            zkl_lock *held, zkl_lock *waiting,
                            zkl_lock *blocker, const char *held_name,
                            const char *wait_name) {
  zkl_lock_free(held);
  zkl_lock_free(waiting);
  zkl_session_close(s, NULL);
  CU_ASSERT_EQUAL(zkt_counter_get(&lost.calls), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&acquired.calls), 1);
  CU_ASSERT_EQUAL(zkl_lock_release(blocker), ZKL_OK);
  zkl_lock_free(blocker);
  zkl_session_close(other, NULL);
  zkt_assert_parent_empty(held_name);
  zkt_assert_parent_empty(wait_name);
}

static void expiry_partition(bool lease) {
  char held_name[64], wait_name[64], hosts[64];
  proxyctl *px;
  int port, rc;
  zkl_session *s, *other;
  zkl_lock *held, *waiting, *blocker;
  CU_ASSERT_FATAL(proxyctl_start(&px, ZKL_TEST_BUILDDIR "/tests/faultproxy",
                                 zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  rc = zkt_open(&s, hosts, 1000, 0, 0);
  if (rc != ZKL_OK)
    proxyctl_stop(px);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
  other = zkt_session(10000);
  if (!lease)
    CU_ASSERT_EQUAL(zkl_session_set_lease_margin(s, -1), ZKL_OK);
  expiry_setup(s, other, &held, &waiting, &blocker, held_name, wait_name);

  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
  /* The server expires the silent session and deletes its nodes. */
  zkt_assert_parent_empty(held_name);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "pass", NULL, 0, 5000), 0);

  check_expired(s, held, waiting, wait_name);
  /* With the lease, the holder knew before the server expired it. */
  CU_ASSERT_EQUAL(lost.rc,
                  lease ? ZKL_LOST_LEASE_EXPIRED : ZKL_LOST_SESSION_EXPIRED);
  expiry_teardown(s, other, held, waiting, blocker, held_name, wait_name);
  proxyctl_stop(px);
}

static void test_expiry_partition(void) { expiry_partition(false); }
static void test_expiry_partition_lease(void) { expiry_partition(true); }

/* The same through the ZooKeeper FAQ's trick (a second handle on the same
 * session closes it). The client may then hear of its nodes' deletion
 * before the expiry: either is a loss. */
static void test_expiry_second_handle(void) {
  char held_name[64], wait_name[64];
  zkl_session *s = zkt_session(4000), *other = zkt_session(10000);
  zkl_lock *held, *waiting, *blocker;
  expiry_setup(s, other, &held, &waiting, &blocker, held_name, wait_name);
  CU_ASSERT_EQUAL_FATAL(zkt_expire(s), 0);
  /* Wait for the session to be known over before checking later calls:
   * the waiting lock may fail first because its own node was deleted. */
  CU_ASSERT_EQUAL(zkt_counter_wait(&acquired.calls, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkl__debug_wait_dead(s, T_WAIT), ZKL_EEXPIRED);
  check_expired(s, held, waiting, wait_name);
  CU_ASSERT(lost.rc == ZKL_LOST_SESSION_EXPIRED ||
            lost.rc == ZKL_LOST_NODE_DELETED);
  expiry_teardown(s, other, held, waiting, blocker, held_name, wait_name);
}

/* ------------------------------------------------------------- wrapping */

static zkl_session *wrapped;
static zkt_counter app_connected;

static void quiet_log(const char *line) { (void)line; }

static void app_watcher(zhandle_t *zh, int type, int state, const char *path,
                        void *ctx) {
  (void)zh;
  (void)path;
  (void)ctx;
  /* The application forwards its session events, as documented. */
  if (wrapped)
    zkl_session_forward_watcher_event(wrapped, type, state);
  if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
    zkt_counter_add(&app_connected, 1);
}

static void test_wrap(void) {
  char name[64], path[512];
  zhandle_t *zh;
  zkl_lock *l, *kept;
  int64_t token;
  zkt_counter_init(&app_connected);
  zkt_name(name, sizeof name, "wrapped");
  zh = zookeeper_init2(zkt_hosts(), app_watcher, 10000, NULL, NULL, 0,
                       quiet_log);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&app_connected, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&wrapped, zh), ZKL_OK);
  CU_ASSERT_PTR_EQUAL(zkl_session_handle(wrapped), zh);
  CU_ASSERT_EQUAL(zkl_session_timeout(wrapped), 10000);

  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, wrapped, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, -1, &token), ZKL_OK);
  CU_ASSERT(token > 0);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);

  /* A lock still held when the wrapped session closes: its node must go,
   * since the handle (and its session) lives on. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&kept, wrapped, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(kept, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(kept, path, sizeof path), ZKL_OK);
  {
    zkl_session *w = wrapped;
    wrapped = NULL; /* stop forwarding before close, as documented */
    zkl_session_close(w, NULL);
  }
  CU_ASSERT_EQUAL(zoo_exists(zh, path, 0, NULL), ZNONODE);
  CU_ASSERT_EQUAL(zkl_lock_release(kept), ZKL_ECLOSED);
  zkl_lock_free(kept);
  /* The handle is still the application's, and still works. */
  CU_ASSERT_EQUAL(zoo_state(zh), ZOO_CONNECTED_STATE);
  CU_ASSERT_EQUAL(zoo_exists(zh, "/", 0, NULL), ZOK);
  zookeeper_close(zh);
  zkt_assert_parent_empty(name);
}

/* A blocking call from the application's own watcher (the handle's
 * completion thread) is refused once the session is wrapped. */
static zkt_counter guard_done;
static int guard_rc = 1;

static void guard_watcher(zhandle_t *zh, int type, int state,
                          const char *path, void *ctx) {
  zkl_session *w = ctx;
  zkl_lock *l;
  (void)zh;
  (void)path;
  if (type == ZOO_SESSION_EVENT)
    return;
  if (zkl_lock_new(&l, w, "from-app-watcher") == ZKL_OK) {
    guard_rc = zkl_lock_acquire(l, 0, NULL);
    zkl_lock_free(l);
  }
  zkt_counter_add(&guard_done, 1);
}

static zkt_counter silent_connected;

/* An application that forwards nothing: the library must not need it. */
static void silent_watcher(zhandle_t *zh, int type, int state,
                           const char *path, void *ctx) {
  (void)zh;
  (void)path;
  (void)ctx;
  if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
    zkt_counter_add(&silent_connected, 1);
}

/* Issue 7, bug 2: a handle wrapped while it is still connecting. Its
 * CONNECTED event goes to the application's watcher before there is a
 * session to forward it to; the session learns the state itself (the
 * wrap's probe proves it connected), so an acquire of a free lock works.
 * (It timed out, 3 runs of 3; with -1 it would have hung.) */
static void test_wrap_connecting(void) {
  char name[64];
  zhandle_t *zh;
  zkl_session *w = NULL;
  zkl_lock *l;
  zkt_name(name, sizeof name, "wrap-connecting");
  zh = zookeeper_init2(zkt_hosts(), silent_watcher, 10000, NULL, NULL, 0,
                       quiet_log);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&w, zh), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_timeout(w), 10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, w, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkl_session_close(w, NULL);
  zookeeper_close(zh);
  zkt_assert_parent_empty(name);
}

/* Issue 7, bug 3: a wrapped session closed while its server is down. The
 * lease declares the lock lost; the close cannot delete the node and gives
 * up waiting; but the application keeps its handle, which reconnects in the
 * same session once the server is back, so the node still stands and must
 * still be deleted (it stayed for good, blocking every other contender).
 * The application forwards nothing here: the session hears the reconnect
 * through a watch of its own.
 *
 * With through_proxy, the handle connects through tests/faultproxy, which
 * drops the reply to the deletion the session makes at the reconnect: the
 * application closes its handle with that deletion still on the wire
 * (before the client gives up on the silent connection, 2/3 of the 6 s
 * session timeout later). */
static void wrap_close_during_outage(bool through_proxy) {
  char name[64], path[512], args[1024], hosts[64];
  zhandle_t *zh;
  zkl_session *w = NULL;
  zkl_lock *l;
  proxyctl *px = NULL;
  int64_t session_id;
  unsigned alive = zkl__debug_sessions_alive();
  int port;
  zkt_rec outage_lost;
  if (!zkt_zkdir()) {
    printf("(skipped: needs a server of its own to stop) ");
    return;
  }
  zkt_counter_init(&silent_connected);
  zkt_rec_init(&outage_lost);
  zkt_name(name, sizeof name, "wrap-outage");
  snprintf(hosts, sizeof hosts, "%s", zkt_hosts());
  if (through_proxy) {
    CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
    snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  }
  zh = zookeeper_init2(hosts, silent_watcher, through_proxy ? 6000 : 4000,
                       NULL, NULL, 0, quiet_log);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&silent_connected, 1, T_WAIT), 1);
  session_id = zoo_client_id(zh)->client_id;
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&w, zh), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_sessions_alive(), alive + 1);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, w, name), ZKL_OK);
  zkl_lock_on_lost(l, zkt_on_lost, &outage_lost);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(l, path, sizeof path), ZKL_OK);
  snprintf(args, sizeof args, "kill '%s' 1 KILL", zkt_zkdir());
  CU_ASSERT_EQUAL_FATAL(zkt_zkserver(args), 0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&outage_lost, 1, T_WAIT),
                  ZKL_LOST_LEASE_EXPIRED); /* told by the lease */
  zkl_lock_free(l);
  /* gives up waiting (the server is still down): the deletions go on in
   * the background, and the close says so */
  CU_ASSERT_EQUAL(zkt_close_how(w), ZKL_CLOSE_BACKGROUND);
  if (px) /* the first request after the reconnect is the deletion */
    CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop-after-op 2", NULL, 0, 5000), 0);
  snprintf(args, sizeof args, "restart '%s' 1", zkt_zkdir());
  CU_ASSERT_EQUAL_FATAL(zkt_zkserver(args), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&silent_connected, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL(zoo_client_id(zh)->client_id, session_id); /* same one */
  if (px) {
    /* Closed at once: the client gives up the silent connection 4 s after
     * the drop (the observer below may take longer than that to reconnect
     * to the restarted server: CI saw it). The server has the deletion:
     * the proxy fires once the request is written to it. */
    CU_ASSERT_EQUAL(proxyctl_wait_fired(px, T_WAIT), 0);
  } else {
    CU_ASSERT_EQUAL(zkt_wait_absent(path, T_WAIT), 0);
  }
  CU_ASSERT_EQUAL(zoo_state(zh), ZOO_CONNECTED_STATE);
  /* With the proxy, the deletion completes here, ZCLOSING: the session
   * must let go without another request (one sent now is never answered,
   * and what waited for it leaked, the session with it). */
  zookeeper_close(zh);
  CU_ASSERT_EQUAL(zkl__debug_sessions_alive(), alive);
  CU_ASSERT_EQUAL(zkt_wait_absent(path, T_WAIT), 0);
  proxyctl_stop(px);
  zkt_assert_parent_empty(name);
}

static void test_wrap_close_during_outage(void) {
  wrap_close_during_outage(false);
}

static void test_wrap_close_handle_during_deletion(void) {
  wrap_close_during_outage(true);
}

/* The client delivers a session event to a copy of its watchers made when
 * the event came in, so the tap (wrap.c), taken out of the client and let
 * go of by a close meanwhile, is still called once with it: a
 * heap-use-after-free (ASan, valgrind) while the client knew the tap by its
 * address. Made on purpose here: the handle's completion thread is held in
 * one of the application's completions while the connection drops (the
 * event is queued behind it); the close lets go of the tap (and then waits
 * for the completion thread, so it runs on a thread of its own); then the
 * completion thread is let go. */
static zkt_counter held_entered, held_gate;

static void held_completion(int rc, const struct Stat *st, const void *data) {
  (void)rc;
  (void)st;
  (void)data;
  zkt_counter_add(&held_entered, 1);
  zkt_counter_wait(&held_gate, 1, T_WAIT);
}

typedef struct thread_close {
  zkl_session *s;
  zkl_close_outcome how;
  int rc;
} thread_close;

static void *close_run(void *arg) {
  thread_close *c = arg;
  c->rc = zkl_session_close(c->s, &c->how);
  return NULL;
}

static void test_wrap_closed_event_on_its_way(void) {
  char hosts[64];
  zhandle_t *zh;
  proxyctl *px;
  unsigned alive = zkl__debug_sessions_alive(), taps = zkl__debug_taps();
  thread_close c = {NULL, (zkl_close_outcome)-1, -1};
  pthread_t th;
  int port, i;
  zkt_counter_init(&silent_connected);
  zkt_counter_init(&held_entered);
  zkt_counter_init(&held_gate);
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  zh = zookeeper_init2(hosts, silent_watcher, 6000, NULL, NULL, 0, quiet_log);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&silent_connected, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&c.s, zh), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_taps(), taps + 1);
  /* the completion thread, held */
  CU_ASSERT_EQUAL_FATAL(zoo_aexists(zh, "/", 0, held_completion, NULL), ZOK);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&held_entered, 1, T_WAIT), 1);
  /* the drop: the I/O thread queues CONNECTING for a copy of every
   * watcher, the tap among them, before it leaves the connected state */
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "refuse", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  for (i = 0; i < T_WAIT / 10 && zoo_state(zh) == ZOO_CONNECTED_STATE; i++)
    usleep(10 * 1000); /* polls the handle's state, bounded */
  CU_ASSERT_NOT_EQUAL(zoo_state(zh), ZOO_CONNECTED_STATE);
  /* nothing owed: the close takes the tap out and lets go of it at once */
  CU_ASSERT_FATAL(pthread_create(&th, NULL, close_run, &c) == 0);
  for (i = 0; i < T_WAIT / 10 && zkl__debug_taps() != taps; i++)
    usleep(10 * 1000);
  CU_ASSERT_EQUAL(zkl__debug_taps(), taps);
  zkt_counter_add(&held_gate, 1); /* the event goes out now */
  pthread_join(th, NULL);
  CU_ASSERT_EQUAL(c.rc, ZKL_OK);
  CU_ASSERT_EQUAL(c.how, ZKL_CLOSE_DONE);
  CU_ASSERT_EQUAL(zkl__debug_sessions_alive(), alive);
  /* the handle is still the application's, and reconnects */
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "accept", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_counter_wait(&silent_connected, 2, T_WAIT), 2);
  zookeeper_close(zh);
  proxyctl_stop(px);
}

static void test_wrap_deadlock_guard(void) {
  zhandle_t *zh;
  zkl_session *w;
  struct Stat st;
  zkt_counter_init(&app_connected);
  zkt_counter_init(&guard_done);
  zh = zookeeper_init2(zkt_hosts(), app_watcher, 10000, NULL, NULL, 0,
                       quiet_log);
  CU_ASSERT_PTR_NOT_NULL_FATAL(zh);
  CU_ASSERT_EQUAL_FATAL(zkt_counter_wait(&app_connected, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&w, zh), ZKL_OK);
  wrapped = w;
  /* A watch of the application's own fires on the handle's completion
   * thread, where its watcher then tries a blocking call. */
  CU_ASSERT_EQUAL(zoo_wexists(zh, "/wrap-guard", guard_watcher, w, &st),
                  ZNONODE);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), "/wrap-guard", NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, NULL, 0),
                  ZOK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&guard_done, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(guard_rc, ZKL_EDEADLK);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), "/wrap-guard", -1), ZOK);
  wrapped = NULL;
  zkl_session_close(w, NULL);
  zookeeper_close(zh);
}

/* Closing a session from inside one of its callbacks cannot wait there: it
 * returns at once and finishes on a private thread. */
typedef struct {
  zkl_session *s;
  int close_rc;          /* what the close in the callback returned */
  zkl_close_outcome how; /* and what it said of how far it got */
  zkt_rec rec;  /* the acquire's status, counted once the close returned */
} closer;

static void close_from_callback(zkl_lock *l, int rc, int64_t token,
                                void *arg) {
  closer *c = arg;
  c->close_rc = zkl_session_close(c->s, &c->how);
  zkt_on_acquired(l, rc, token, &c->rec);
}

static void test_close_from_callback(void) {
  char name[64];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  closer c;
  c.s = s;
  zkt_rec_init(&c.rec);
  zkt_name(name, sizeof name, "close-in-callback");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, close_from_callback, &c),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&c.rec.calls, 1, T_WAIT), 1);
  /* it held the lock when it closed (else "its node goes" is moot) */
  CU_ASSERT_EQUAL(c.rec.rc, ZKL_OK);
  /* The close completed for its caller and says that it goes on in the
   * background. */
  CU_ASSERT_EQUAL(c.close_rc, ZKL_OK);
  CU_ASSERT_EQUAL(c.how, ZKL_CLOSE_BACKGROUND);
  /* The held lock's node goes with the closed session. */
  zkt_assert_parent_empty(name);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_ECLOSED);
  zkl_lock_free(l);
}

/* Once the session is closed, every call on its locks that returns a
 * status says ZKL_ECLOSED: zkl_lock_get_stats() too, which still copies
 * the counters as they stood. */
static void test_stats_after_close(void) {
  char name[64];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  zkl_lock_stats st;
  zkt_name(name, sizeof name, "stats-closed");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, 0, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_OK);
  CU_ASSERT_EQUAL(st.grants, 1);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  memset(&st, 0, sizeof st);
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, &st), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(st.grants, 1);
  CU_ASSERT_EQUAL(st.releases, 1); /* the close released it */
  CU_ASSERT_EQUAL(zkl_lock_get_stats(l, NULL), ZKL_EINVAL);
  zkl_lock_free(l);
  zkt_assert_parent_empty(name);
}

static zkt_counter log_lines;

static void count_log(const char *line, void *arg) {
  (void)arg;
  if (strstr(line, "session establishment complete"))
    zkt_counter_add(&log_lines, 1);
}

static void test_log_handler(void) {
  zkl_session *s;
  zkt_counter_init(&log_lines);
  CU_ASSERT_EQUAL(zkl_on_log(count_log, NULL), ZKL_OK);
  s = zkt_session(10000);
  CU_ASSERT_EQUAL(zkt_counter_wait(&log_lines, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkl_on_log(NULL, NULL), ZKL_OK);
  zkl_session_close(s, NULL);
}

/* A standalone server has nothing to follow: its configuration is empty.
 * The session reads it once per connection (a reset connection makes it
 * read again, once: no loop), keeps its list as given, chroot included,
 * and tells no change. A wrapped session's list is the application's. */
static int servers_events;
static void count_servers(zkl_session *s, const zkl_event *ev, void *arg) {
  (void)s;
  (void)arg;
  if (ev->type == ZKL_EVENT_SERVERS)
    __atomic_add_fetch(&servers_events, 1, __ATOMIC_RELAXED);
}

static void test_servers_standalone(void) {
  char hosts[128], now[ZKL_SERVERS_MAX], tiny[8];
  zkl_debug_counts c;
  proxyctl *px;
  zkl_session *s, *w;
  uint64_t before;
  int port, rc;
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d/zkt-no-such-chroot", port);
  rc = zkt_open(&s, hosts, 6000, 0, 0);
  if (rc != ZKL_OK)
    proxyctl_stop(px);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_on_event(s, count_servers, NULL), ZKL_OK);
  zkt_assert_quiet(s);
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CONFIG], 1);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, hosts);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, tiny, sizeof tiny), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, NULL, 10), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_session_get_servers(NULL, now, sizeof now), ZKL_EINVAL);

  /* A new connection in the same session: read again, once. The client
   * may be connected again before this thread looks (seen once in CI):
   * the count of lost connections tells that it went. */
  before = zkt_disconnects(s);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL(zkt_wait_disconnects(s, before, T_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(s, true, T_WAIT), 0);
  zkt_assert_quiet(s);
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CONFIG], 2);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, hosts);
  CU_ASSERT_EQUAL(__atomic_load_n(&servers_events, __ATOMIC_RELAXED), 0);
  zkl_session_close(s, NULL);
  proxyctl_stop(px);

  /* Wrapped: nothing read, nothing to report. */
  CU_ASSERT_EQUAL_FATAL(zkt_wrap(&w, zkt_observer()), ZKL_OK);
  zkt_assert_quiet(w);
  zkl__debug_counts(w, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_CONFIG], 0);
  CU_ASSERT_EQUAL(zkl_session_get_servers(w, now, sizeof now), ZKL_EINVAL);
  zkl_session_close(w, NULL);
}

/* A move to other servers while a request is under way: the ZooKeeper
 * client moves without a word and keeps the request, whose answer went
 * with the old connection. Here a guarded write reaches the server through
 * a proxy that then swallows everything, and the session moves (as a
 * change of the ensemble's configuration would make it) to the server
 * itself, with nothing else of the session under way (no lease: no
 * heartbeats). The write must not wait for the client's own time-outs:
 * the library's read after the move wakes the client's I/O thread (the
 * socket closed under its poll() does not: it moves up to T/3 later) and
 * its answer makes the client give the write up at once (it did so only
 * when that connection had heard nothing for 2T/3). The write reports
 * what that is, an outcome unknown (ZCONNECTIONLOSS, not the client's
 * ZRUNTIMEINCONSISTENCY); the lock is still held. With T = 30 s, the
 * 5 s bound tells the two apart.
 *
 * How the move is made to happen: the 3.8 client compares servers by IP
 * address only (addrvec_contains), so between the proxy and the server,
 * both on 127.0.0.1, it sees no new server, and moves only by its
 * balancing draw when the list grows: from 1 entry to 8, with probability
 * 7/8. In a deterministic connection order it does not reseed drand48(),
 * so seeding it here makes that draw (0.042 for seed 1) certain. */
static zkt_counter multi_calls;
static int multi_rc;
static void on_multi(zkl_lock *l, int rc, void *arg) {
  (void)l;
  (void)arg;
  multi_rc = rc;
  zkt_counter_add(&multi_calls, 1);
}

static void test_move_with_request_under_way(void) {
  char hosts[64], name[64], path[128], now[ZKL_SERVERS_MAX],
      eight[ZKL_SERVERS_MAX] = "";
  zkl_debug_counts c;
  zoo_op_t op;
  zoo_op_result_t result;
  proxyctl *px;
  zkl_session *s;
  zkl_lock *l;
  int64_t token;
  int port, rc, i;
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  rc = zkt_open(&s, hosts, 30000, 0, 0);
  if (rc != ZKL_OK)
    proxyctl_stop(px);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_timeout(s), 30000);
  CU_ASSERT_EQUAL(zkl_session_set_lease_margin(s, -1), ZKL_OK);
  zkt_name(name, sizeof name, "move");
  snprintf(path, sizeof path, "/zkt-%s", name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, T_WAIT, &token), ZKL_OK);
  CU_ASSERT_EQUAL(zkl__debug_wait_settled(s, T_WAIT), 0);

  zkt_counter_init(&multi_calls);
  zoo_create_op_init(&op, path, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop-after-op 14", NULL, 0, 5000), 0);
  CU_ASSERT_EQUAL_FATAL(
      zkl_lock_commit_async(l, 1, &op, &result, on_multi, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(proxyctl_wait_fired(px, T_WAIT), 0);
  for (i = 0; i < 8; i++)
    snprintf(eight + strlen(eight), sizeof eight - strlen(eight), "%s%s",
             i ? "," : "", zkt_hosts());
  zoo_deterministic_conn_order(1);
  srand48(1);
  CU_ASSERT_EQUAL(zkl__follow_move_now(s, eight), ZKL_OK);
  zoo_deterministic_conn_order(0);
  CU_ASSERT_EQUAL(zkl_session_get_servers(s, now, sizeof now), ZKL_OK);
  CU_ASSERT_STRING_EQUAL(now, eight);
  CU_ASSERT_EQUAL(zkt_counter_wait(&multi_calls, 1, 5000), 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&multi_calls, 1, 60000), 1);
  CU_ASSERT_EQUAL(multi_rc, ZCONNECTIONLOSS);
  zkl__debug_counts(s, &c);
  CU_ASSERT_EQUAL(c.sent[ZKL_RQ_FLUSH], 1);
  /* the server carried it out; the lock is held still, through the
   * server itself now (the proxy swallows everything) */
  CU_ASSERT_EQUAL(zoo_exists(zkt_observer(), path, 0, NULL), ZOK);
  CU_ASSERT_EQUAL(zkl_lock_token(l), token);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  zkl_lock_free(l);
  zkt_assert_quiet(s);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  proxyctl_stop(px);
  zoo_delete(zkt_observer(), path, -1);
  zkt_assert_parent_empty(name);
}

/* ------------------------------------------------ zkl_session_options */

/* A refused open opens nothing: no session is left allocated, so nothing
 * was made on the server either. */
static void check_refused(const zkl_session_options *o, const char *what) {
  zkl_session *s = NULL;
  unsigned alive = zkl__debug_sessions_alive();
  int rc = zkl_session_open(&s, o);
  zkt_check(rc == ZKL_EINVAL, "%s: %s, not ZKL_EINVAL", what,
            zkl_strerror(rc));
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(zkl__debug_sessions_alive(), alive);
  if (rc == ZKL_OK)
    zkl_session_close(s, NULL);
}

static void test_options_size_below_1_0_refused(void) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  o.struct_size = 0;
  check_refused(&o, "struct_size 0");
  o.struct_size = offsetof(zkl_session_options, event_arg);
  check_refused(&o, "struct_size one field short of 1.0's");
  /* 1.0's struct ends with event_arg (fields appended since do not move
   * it: zkl_session_options.agent) */
  o.struct_size = offsetof(zkl_session_options, event_arg) + sizeof(void *) - 1;
  check_refused(&o, "struct_size one byte short of 1.0's");
}

/* A caller compiled against a later header passes a larger struct: taken
 * when what this library does not know is zero, refused otherwise (the
 * caller asked for an option this library lacks). */
static void test_options_larger_taken_only_with_zero_tail(void) {
  struct {
    zkl_session_options o;
    uint64_t later[2];
  } big;
  zkl_session *s = NULL;
  memset(&big, 0, sizeof big);
  zkl_session_options_init(&big.o);
  big.o.struct_size = sizeof big;
  big.o.hosts = zkt_hosts();
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&s, &big.o), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_session_timeout(s), ZKL_SESSION_TIMEOUT_DEFAULT_MS);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  big.later[1] = 1;
  check_refused(&big.o, "a nonzero byte beyond the struct");
}

static void test_options_exactly_one_of_hosts_and_handle(void) {
  zkl_session *s = zkt_session(10000);
  zkl_session_options o;
  zkl_session_options_init(&o);
  check_refused(&o, "neither hosts nor handle");
  o.hosts = zkt_hosts();
  o.handle = zkl_session_handle(s);
  check_refused(&o, "both hosts and handle");
  o.hosts = NULL;
  o.session_timeout_ms = 10000;
  check_refused(&o, "a session timeout with a handle");
  zkt_assert_quiet(s);
  zkl_session_close(s, NULL);
}

static void test_options_unknown_flag_refused(void) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  o.flags = 2;
  check_refused(&o, "flag 2");
  o.flags = ZKL_OPEN_NO_FOLLOW_CONFIG | 0x80000000u;
  check_refused(&o, "a known flag and an unknown one");
}

static void test_options_negative_timeouts_refused(void) {
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  o.session_timeout_ms = -1;
  check_refused(&o, "session_timeout_ms -1");
  o.session_timeout_ms = 0;
  o.connect_timeout_ms = -1;
  check_refused(&o, "connect_timeout_ms -1");
  o.connect_timeout_ms = 0;
  o.server_tick_ms = -1;
  check_refused(&o, "server_tick_ms -1");
  CU_ASSERT_EQUAL(zkl_session_open(NULL, &o), ZKL_EINVAL);
}

/* The margin can only be checked against the timeout the server granted:
 * open connects, finds no lease left, closes the session it opened and
 * says ZKL_EINVAL. With tick 0 (T/2 assumed) a 10 s session's P is
 * 2.751 s, so a margin of 7 s leaves a lease and one of 8 s none. */
static void test_options_margin_without_lease_refused(void) {
  zkl_session_options o;
  zkl_session *s = NULL;
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  o.session_timeout_ms = 10000;
  o.lease_margin_ms = 8000;
  check_refused(&o, "a margin of 8 s of a 10 s session");
  o.lease_margin_ms = 7000;
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&s, &o), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  /* The tick given with it counts: 2 s ticks make P 1.101 s, so 8 s fits. */
  o.lease_margin_ms = 8000;
  o.server_tick_ms = 2000;
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&s, &o), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
}

/* 1.0: the state callback and the event hook given as options are set
 * before the first connection, so an opened session's first connection is
 * told as ZKL_STATE_CONNECTED (before 1.0 only a wrapped handle's was:
 * they could only be set once open had returned). */
typedef struct {
  zkt_counter connected; /* ZKL_STATE_CONNECTED told */
  zkt_counter closed;    /* ZKL_STATE_CLOSED told */
  zkt_counter session_events; /* ZKL_EVENT_SESSION with ZKL_STATE_CONNECTED */
} open_heard;

static void note_state(zkl_session *s, zkl_state state, void *arg) {
  open_heard *h = arg;
  (void)s;
  if (state == ZKL_STATE_CONNECTED)
    zkt_counter_add(&h->connected, 1);
  else if (state == ZKL_STATE_CLOSED)
    zkt_counter_add(&h->closed, 1);
}

static void note_event(zkl_session *s, const zkl_event *ev, void *arg) {
  open_heard *h = arg;
  (void)s;
  if (ev->type == ZKL_EVENT_SESSION && ev->reason == ZKL_STATE_CONNECTED)
    zkt_counter_add(&h->session_events, 1);
}

static void check_open_heard(zkl_session_options *o) {
  open_heard h;
  zkl_session *s = NULL;
  zkt_counter_init(&h.connected);
  zkt_counter_init(&h.closed);
  zkt_counter_init(&h.session_events);
  o->on_state = note_state;
  o->state_arg = &h;
  o->on_event = note_event;
  o->event_arg = &h;
  CU_ASSERT_EQUAL_FATAL(zkl_session_open(&s, o), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_counter_wait(&h.connected, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_counter_wait(&h.session_events, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  /* told once each: CLOSED is the close's last call */
  CU_ASSERT_EQUAL(zkt_counter_get(&h.connected), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.session_events), 1);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.closed), 1);
}

static void test_options_on_state_hears_first_connection(void) {
  zkl_session *app = zkt_session(10000);
  zkl_session_options o;
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  check_open_heard(&o); /* a session the library opens */
  zkl_session_options_init(&o);
  o.handle = zkl_session_handle(app);
  check_open_heard(&o); /* one on the application's handle */
  zkl_session_close(app, NULL);
}

/* A failed open calls neither callback, before it returns or after: here
 * the server granted the session, so CONNECTED (and its event) came, and
 * the margin checked only then refused it, and the close that followed
 * would say CLOSED. The open's close joins the client's threads, so what
 * the counters say at its return is final. */
static void test_options_failed_open_calls_nothing(void) {
  open_heard h;
  zkl_session_options o;
  zkl_session *s = NULL;
  unsigned alive = zkl__debug_sessions_alive();
  zkt_counter_init(&h.connected);
  zkt_counter_init(&h.closed);
  zkt_counter_init(&h.session_events);
  zkl_session_options_init(&o);
  o.hosts = zkt_hosts();
  o.session_timeout_ms = 10000;
  o.lease_margin_ms = 8000; /* refused once the timeout is granted */
  o.on_state = note_state;
  o.state_arg = &h;
  o.on_event = note_event;
  o.event_arg = &h;
  CU_ASSERT_EQUAL(zkl_session_open(&s, &o), ZKL_EINVAL);
  CU_ASSERT_PTR_NULL(s);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.connected), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.session_events), 0);
  CU_ASSERT_EQUAL(zkt_counter_get(&h.closed), 0);
  CU_ASSERT_EQUAL(zkl__debug_sessions_alive(), alive); /* nothing held on */
}

/* N8: the _on_ setters of a lock return a status: ZKL_EINVAL for NULL,
 * ZKL_OK, and ZKL_ECLOSED once the session's close has begun. */
static void on_revoke_nothing(zkl_lock *l, void *arg) {
  (void)l;
  (void)arg;
}

static void test_lock_on_setters_say_closed(void) {
  zkl_session *s = zkt_session(10000);
  zkl_lock *l;
  zkt_rec rec;
  char name[64];
  zkt_rec_init(&rec);
  zkt_name(name, sizeof name, "on-setters");
  CU_ASSERT_EQUAL(zkl_lock_on_lost(NULL, zkt_on_lost, &rec), ZKL_EINVAL);
  CU_ASSERT_EQUAL(zkl_lock_on_revoke(NULL, on_revoke_nothing, NULL),
                  ZKL_EINVAL);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l, s, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_on_lost(l, zkt_on_lost, &rec), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_on_revoke(l, on_revoke_nothing, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_on_lost(l, NULL, NULL), ZKL_OK); /* clears */
  CU_ASSERT_EQUAL(zkl_on_log(NULL, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_close_how(s), ZKL_CLOSE_DONE);
  CU_ASSERT_EQUAL(zkl_lock_on_lost(l, zkt_on_lost, &rec), ZKL_ECLOSED);
  CU_ASSERT_EQUAL(zkl_lock_on_revoke(l, on_revoke_nothing, NULL),
                  ZKL_ECLOSED);
  zkl_lock_free(l);
  CU_ASSERT_EQUAL(zkt_counter_get(&rec.calls), 0);
}

int main(void) {
  static const zkt_test tests[] = {
      {"open: every server refuses: ZKL_ECONNECT at once, not at the timeout",
       test_refused_gives_up_early},
      {"open: bad hosts ZKL_EINVAL, unknown ZKL_ERESOLVE, nobody ZKL_ECONNECT in time",
       test_connect_errors},
      {"zkl_session_timeout says what the server granted, its floor of two ticks too", test_negotiated_timeout},
      {"timeouts the client cannot use are clamped", test_timeout_clamped},
      {"an expired session (partition, lease off) tells its holder it lost",
       test_expiry_partition},
      {"an expired session (partition, lease on) tells its holder it lost", test_expiry_partition_lease},
      {"an expired session (a second handle closed it) tells its holder it lost", test_expiry_second_handle},
      {"a wrapped application handle locks, with the timeout it was granted", test_wrap},
      {"blocking call from the application's watcher", test_wrap_deadlock_guard},
      {"a handle wrapped while connecting learns it connected: an acquire works", test_wrap_connecting},
      {"wrapped close during an outage", test_wrap_close_during_outage},
      {"a wrapped session closed while a session event is on its way to it",
       test_wrap_closed_event_on_its_way},
      {"handle closed under a wrapped session's last deletion",
       test_wrap_close_handle_during_deletion},
      {"close from a callback", test_close_from_callback},
      {"after close, a lock's calls say ZKL_ECLOSED; get_stats still copies",
       test_stats_after_close},
      {"zkl_on_log hands the client's log lines to the handler",
       test_log_handler},
      {"a standalone server: no servers to follow", test_servers_standalone},
      {"a move with a request under way", test_move_with_request_under_way},
      {"options: a struct_size below 1.0's is refused",
       test_options_size_below_1_0_refused},
      {"options: a larger struct is taken only with zeros beyond",
       test_options_larger_taken_only_with_zero_tail},
      {"options: exactly one of hosts and handle",
       test_options_exactly_one_of_hosts_and_handle},
      {"options: an unknown flag is refused", test_options_unknown_flag_refused},
      {"options: negative timeouts are refused",
       test_options_negative_timeouts_refused},
      {"options: a margin that leaves no lease is refused",
       test_options_margin_without_lease_refused},
      {"options: a failed open calls neither callback",
       test_options_failed_open_calls_nothing},
      {"options: on_state hears the first connection",
       test_options_on_state_hears_first_connection},
      {"a lock's _on_ setters say ZKL_ECLOSED after close",
       test_lock_on_setters_say_closed},
      {NULL, NULL}};
  return zkt_main("session", tests);
}
