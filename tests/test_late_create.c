/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_late_create - a multi-lock's enqueue transaction whose reply is
 * lost, applied by the ensemble after the client reconnected to another
 * server and looked for it (issue 24, item 11: "a recovered create that
 * lands after the recovery listing leaves a node that nobody owns until
 * the session ends, and it blocks its queue").
 *
 * Three servers, each in a network namespace (zkserver --netns), the links
 * from the leader L to both followers slowed (LINK_MS each way): a write
 * commits about 2 x LINK_MS after the leader proposes it, and a follower
 * applies it LINK_MS after that. The multi-lock's session reaches a
 * follower F through proxy A, and the other follower G through proxy B,
 * which refuses at first. Its transaction goes to F (proxy A black-holes
 * the connection right after it: the reply is lost); F forwards it to L
 * (LINK_MS later), and L proposes it. Meanwhile the client is sent to G
 * (A refuses and resets, B accepts); G revalidates the session with L
 * (after L proposed the transaction: it is not refused as coming from a
 * session that moved) and answers the handshake, and the client looks for
 * its transaction: G knows it only as L's proposal, and answers a read of
 * the session at once, from what it has applied. (A leader would not:
 * it keeps a session's reads behind the writes a follower forwarded for
 * it.) Without the write that orders the recovery's listings after the
 * lost transaction (lib/together.c, zkl__together_recover_locked), the
 * listings saw nothing, the transaction went again, and the lost one's
 * nodes appeared at G a moment later:
 *   found    the lost transaction must be found and adopted: the first
 *            name's queue sees one create (and the release's delete),
 *            counted by its parent's cversion; sent again, it saw two
 *            creates and the deletion of the duplicate;
 *   cancel   B holds back the answer of the first transaction the client
 *            sends after the reconnect, and the acquire is cancelled
 *            meanwhile: sent again, that transaction was undone and the
 *            lost one's nodes stayed, nobody's, until the session ended.
 * The same for a mutex, whose enqueue is one create (op 15 instead of the
 * transaction's 14): its search after the lost reply (engine.c,
 * enter_recovering_locked) went without the ordering write, so the create
 * went again (4 changes of the queue, not 2). And a cancel while the reply
 * was still awaited, before the reconnect, left the search to the
 * session's cleanup (cleanup.c), whose listing missed the late node: it
 * stayed until the session ended (a multi-lock's too).
 * The timing (G answers the handshake between the proposal and the commit)
 * only decides whether the old code went wrong; the code under test must
 * be right whatever it is.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proxyctl.h"
#include "zktest.h"

#define SESSION_MS 10000
#define LINK_MS 300
#define PROXY ZKL_TEST_BUILDDIR "/tests/faultproxy"

/* Lets time pass as part of the scenario (how long the transaction takes
 * to reach the leader); never used to wait for something to happen. */
static void scenario_lasts(int ms) {
  zkt_counter never;
  zkt_counter_init(&never);
  zkt_counter_wait(&never, 1, ms);
}

/* Children changes of path so far (its cversion), read from the leader's
 * own session, which answers from what the leader applied, once path has
 * no child there. The release before this read was answered by a
 * follower, which can apply a commit before the leader itself does (the
 * leader sends the commit to its followers, then applies it): read at
 * once, the count missed the release's delete now and then (a fresh-clone
 * CI run saw 3 changes where the adopted transaction made 2). */
static int cversion(zkl_session *at_leader, const char *path) {
  int64_t deadline = zkt_now_ms() + ZKT_WAIT;
  for (;;) {
    struct Stat st;
    zkt_counter never; /* a bounded poll of the leader's view */
    int rc = zoo_exists(zkl_session_handle(at_leader), path, 0, &st);
    CU_ASSERT_EQUAL(rc, ZOK);
    if (rc != ZOK)
      return -1;
    if (st.numChildren == 0)
      return st.cversion;
    if (!zkt_check(zkt_now_ms() < deadline,
                   "%s still has %d children at the leader", path,
                   st.numChildren))
      return -1;
    zkt_counter_init(&never);
    zkt_counter_wait(&never, 1, 10);
  }
}

/* Whether l's acquire has ended on its side (it may still clean up). */
static bool acquire_over(zkl_lock *l) {
  bool over;
  pthread_mutex_lock(&l->s->mu);
  over = !l->att || zkl__attempt_state(l->att) >= ZKL_AS_ENDING;
  pthread_mutex_unlock(&l->s->mu);
  return over;
}

/* The library's log of the round (ZKLOCK_TRACE: every transition, with
 * the line that made it), shown when the round fails: a CI run's log is
 * all there is to read then. The last LOG_LINES lines are kept. */
#define LOG_LINES 160
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char log_lines[LOG_LINES][200];
static unsigned log_count;

static void keep_log(const char *line, void *arg) {
  (void)arg;
  pthread_mutex_lock(&log_mu);
  snprintf(log_lines[log_count++ % LOG_LINES], sizeof log_lines[0], "%s", line);
  pthread_mutex_unlock(&log_mu);
}

static void log_forget(void) {
  pthread_mutex_lock(&log_mu);
  log_count = 0;
  pthread_mutex_unlock(&log_mu);
}

static void log_show(void) {
  unsigned i;
  pthread_mutex_lock(&log_mu);
  printf("\n    the library's log of this round:");
  for (i = log_count > LOG_LINES ? log_count - LOG_LINES : 0; i < log_count;
       i++)
    printf("\n      %s", log_lines[i % LOG_LINES]);
  pthread_mutex_unlock(&log_mu);
}

/* ZooKeeper's opcodes, as the proxy counts them */
#define OP_CREATE2 15
#define OP_MULTI 14

/* multi: a multi-lock of two names, whose enqueue is one transaction; else
 * a mutex, whose enqueue is one create (its search after a lost reply and
 * the cleanup of a cancel are the engine's own: engine.c, cleanup.c). */
/* early: the cancel comes while the enqueue's reply is still awaited on
 * the dead connection, so the search for what it made is the session's
 * cleanup at the reconnect (cleanup.c), not the attempt's. */
static void one_round_at(bool multi, bool cancel, bool early) {
  char n[2][64], parent[2][512], hosts[128], target[64], cmd[64];
  const char *names[2] = {n[0], n[1]};
  int nn = multi ? 2 : 1;
  proxyctl *pa = NULL, *pb = NULL;
  zkl_session *s, *ls;
  zkl_lock *l;
  zkt_rec rec;
  int leader, f, g, port_a, port_b, i, before, rc;
  int64_t fired_ms, back_ms;
  uint64_t lost_before;
  unsigned failed_before;

  zkt_name(n[0], sizeof n[0], cancel ? "late-cancel-a" : "late-found-a");
  zkt_name(n[1], sizeof n[1], cancel ? "late-cancel-b" : "late-found-b");
  for (i = 0; i < nn; i++)
    zkt_parent(parent[i], sizeof parent[i], n[i]);
  zkt_rec_init(&rec);
  log_forget();
  failed_before = CU_get_number_of_failures();
  CU_ASSERT_EQUAL_FATAL(zkt_heal(), 0);
  leader = zkt_leader();
  CU_ASSERT_FATAL(leader > 0);
  f = leader % 3 + 1;
  g = f % 3 + 1;
  snprintf(target, sizeof target, "%s", zkt_server_hosts(f));
  CU_ASSERT_FATAL(proxyctl_start(&pa, PROXY, target, &port_a) == 0);
  snprintf(target, sizeof target, "%s", zkt_server_hosts(g));
  CU_ASSERT_FATAL(proxyctl_start(&pb, PROXY, target, &port_b) == 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(pb, "refuse"), 0); /* the session starts on F */
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d,127.0.0.1:%d", port_a, port_b);
  /* The proxies are its servers: it must not follow the ensemble's
   * configuration to the real ones. */
  CU_ASSERT_EQUAL_FATAL(
      zkt_open(&s, hosts, SESSION_MS, SESSION_MS, ZKL_OPEN_NO_FOLLOW_CONFIG),
      ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkt_open(&ls, zkt_server_hosts(leader), SESSION_MS,
                                 SESSION_MS, ZKL_OPEN_NO_FOLLOW_CONFIG),
                        ZKL_OK);
  rc = multi ? zkl_lock_new_multi(&l, s, names, 2) : zkl_lock_new(&l, s, n[0]);
  CU_ASSERT_EQUAL_FATAL(rc, ZKL_OK);
  /* the parents, while the links are quick */
  CU_ASSERT_EQUAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
  before = cversion(ls, parent[0]);

  {
    char delay[32];
    snprintf(delay, sizeof delay, "delay %d", LINK_MS);
    CU_ASSERT_EQUAL_FATAL(zkt_link(leader, f, delay), 0);
    CU_ASSERT_EQUAL_FATAL(zkt_link(leader, g, delay), 0);
  }
  /* its enqueue (a transaction, or a create) */
  snprintf(cmd, sizeof cmd, "drop-after-op %d", multi ? OP_MULTI : OP_CREATE2);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(pa, cmd), 0);
  /* its next transaction: the enqueue sent again (a multi-lock that went
   * wrong), or the write its search goes behind (each goes first) */
  if (cancel && !early)
    CU_ASSERT_EQUAL(zkt_proxy_cmd(pb, "hold-after-op 14"), 0);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire_async(l, -1, zkt_on_acquired, &rec),
                        ZKL_OK);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(pa, ZKT_WAIT), 0);
  fired_ms = zkt_now_ms();
  if (early)
    CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
  /* F forwards it: it reaches L about LINK_MS later, and G applies it
   * about 4 x LINK_MS after it went out. G's revalidation of the session
   * must reach L after the transaction did (LINK_MS after the client
   * comes), and its answer come back before the commit does. */
  scenario_lasts(LINK_MS / 2);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(pa, "refuse"), 0);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(pb, "accept"), 0);
  lost_before = zkt_disconnects(s);
  CU_ASSERT_EQUAL(zkt_proxy_cmd(pa, "reset"), 0);
  /* the count, not the state: it may be connected again before we look */
  CU_ASSERT_EQUAL(zkt_wait_disconnects(s, lost_before, ZKT_WAIT), 0);
  CU_ASSERT_EQUAL(zkl__debug_wait_connected(s, true, ZKT_WAIT), 0);
  back_ms = zkt_now_ms();
  printf("\n    %s: reconnected to the other follower %lld ms after the "
         "transaction went out (L proposed it at about %d ms, G applies it "
         "at about %d ms)\n",
         cancel ? "cancel" : "found", (long long)(back_ms - fired_ms), LINK_MS,
         4 * LINK_MS);

  if (!cancel) {
    CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
    zkt_assert_quiet(s);
    /* one create (the lost transaction's node, adopted), one delete (the
     * release): nothing sent twice */
    rc = cversion(ls, parent[0]) - before;
    CU_ASSERT_EQUAL(rc, 2);
    if (rc != 2) {
      printf("\n    the first name's queue saw %d changes, not 2: the "
             "transaction was sent again",
             rc);
    }
  } else {
    if (!early) {
      CU_ASSERT_EQUAL(proxyctl_wait_fired(pb, ZKT_WAIT), 0);
      CU_ASSERT_EQUAL(zkl_lock_cancel(l), ZKL_OK);
      for (i = 0; i < ZKT_WAIT / 10 && !acquire_over(l); i++)
        scenario_lasts(10);
      CU_ASSERT(acquire_over(l));
      CU_ASSERT_EQUAL(zkt_proxy_cmd(pb, "pass"), 0);
    }
    CU_ASSERT_EQUAL(zkt_rec_wait(&rec, 1, ZKT_WAIT), ZKL_ECANCELED);
    /* the lost transaction's nodes, wherever they landed, do not stay
     * (the session lives on) */
    for (i = 0; i < nn; i++)
      zkt_assert_parent_empty(n[i]);
    zkt_assert_quiet(s);
  }
  CU_ASSERT_EQUAL(zkt_heal(), 0);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  zkl_session_close(ls, NULL);
  proxyctl_stop(pa);
  proxyctl_stop(pb);
  for (i = 0; i < nn; i++)
    zkt_assert_parent_empty(n[i]);
  if (CU_get_number_of_failures() > failed_before)
    log_show();
}

static void one_round(bool multi, bool cancel) {
  one_round_at(multi, cancel, false);
}

static void test_found(void) { one_round(true, false); }
static void test_cancel(void) { one_round(true, true); }
static void test_cancel_early(void) { one_round_at(true, true, true); }
static void test_mutex_found(void) { one_round(false, false); }
static void test_mutex_cancel(void) { one_round(false, true); }
static void test_mutex_cancel_early(void) { one_round_at(false, true, true); }

int main(void) {
  static const zkt_test tests[] = {
      {"a lost transaction applied after the reconnect is found", test_found},
      {"a cancel while it is sent again leaves nothing", test_cancel},
      {"a cancel before the reconnect leaves nothing either",
       test_cancel_early},
      {"a mutex: a lost create applied after the reconnect is found",
       test_mutex_found},
      {"a mutex: a cancel while its lost create is looked for leaves nothing",
       test_mutex_cancel},
      {"a mutex: a cancel before the reconnect leaves nothing either",
       test_mutex_cancel_early},
      {NULL, NULL}};
  /* every transition logged, and kept for a failure (log_show) */
  setenv("ZKLOCK_TRACE", "1", 1);
  zkl_on_log(keep_log, NULL);
  zkt_use_netns_ensemble(3); /* tickTime 200, syncLimit 5 */
  return zkt_main("late create", tests);
}
