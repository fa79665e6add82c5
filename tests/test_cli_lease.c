/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_lease.c - zklock when the lock is lost: the node deleted, the
 * lease run out in a partition, and the lease kept through connection
 * resets. zklock frozen or killed, when only its keeper can stop the
 * command, and the keeper's own life are in test_cli_keeper.c. See
 * clitest.h for how zklock and its command are run. */
#define _GNU_SOURCE 1
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clitest.h"
#include "proxyctl.h"

/* The holder's node deleted under it: the command gets SIGTERM, zklock
 * says why and exits 4. */
static void test_lost_node_deleted(void) {
  char name[64], line[512], node[256], err[2048];
  long long token;
  long pid;
  proc p;
  zkt_name(name, sizeof name, "lost");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL_FATAL(
      sscanf(line, "start %ld %lld %*s %255s", &pid, &token, node), 3);
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: lost the lock /locks/") == err);
  CU_ASSERT(strstr(err, "deleted") != NULL);
  cleanup(&p);
  assert_no_node(name);
}

/* A command that ignores SIGTERM after a loss gets SIGKILL after -k. */
static void test_lost_kill_after(void) {
  char name[64], line[512], node[256];
  long pid;
  int64_t deleted, took;
  proc p;
  zkt_name(name, sizeof name, "killafter");
  spawn(&p, "-s", zkt_hosts(), "-k", "0.5", name, "--", HELPER("ignore-term"),
        NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL_FATAL(sscanf(line, "start %ld %*s %*s %255s", &pid, node), 2);
  deleted = zkt_now_ms();
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15"); /* ... and it went on */
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  took = zkt_now_ms() - deleted;
  CU_ASSERT(took >= 450 && took < 5000);
  /* zklock reaped it: killed, not left running */
  CU_ASSERT(kill((pid_t)pid, 0) == -1 && errno == ESRCH);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* Cut off from ZooKeeper while the command runs: the lease runs out before
 * the server can expire the session; the command gets SIGTERM, zklock
 * exits 4 and says so. */
static void test_lease_partition(void) {
  char name[64], hosts[64], line[512], err[2048];
  proxyctl *px;
  int port;
  proc p;
  zkt_name(name, sizeof name, "lease");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  spawn(&p, "-s", hosts, "-t", "2000", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: lost the lock /locks/") == err);
  CU_ASSERT(strstr(err, "no answer from ZooKeeper") != NULL);
  cleanup(&p);
  proxyctl_stop(px);
  assert_no_node(name); /* the server expires the session */
}

/* -n whose one exchange is cut off (the create reaches the server, its
 * answer never comes back): exit 3 once the client gives the connection
 * up, not a wait for the partition to heal; the command never runs. */
static void test_nonblock_partition(void) {
  char name[64], hosts[64], line[512], err[2048], want[256];
  proxyctl *px;
  int port;
  proc p;
  zkt_name(name, sizeof name, "nbpart");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  /* 15: create2, the acquire's first request */
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop-after-op 15", NULL, 0, 5000), 0);
  spawn(&p, "-s", hosts, "-t", "2000", "-n", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(proxyctl_wait_fired(px, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 3);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: could not try /locks/%s: the connection to ZooKeeper was "
           "lost before it answered\n",
           name);
  CU_ASSERT_STRING_EQUAL(err, want);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, T_WAIT), 0);
  cleanup(&p);
  proxyctl_stop(px);
  assert_no_node(name); /* the session expires on the server */
}

/* Connections reset under a healthy session, again and again, each time
 * right after one of the lease's syncs reached the server, so that its
 * answer is lost: the client reconnects in the same session, and the
 * reconnect itself (the server revalidated the session with the leader)
 * and the write that follows it prove the lease (lib/lease.c), so the
 * lease goes on, and neither zklock nor its keeper touches the command,
 * over more than a session timeout. */
static void test_reconnects_keep_lease(void) {
  char name[64], hosts[64], line[512], err[1024];
  proxyctl *px;
  int port, i;
  proc p;
  zkt_name(name, sizeof name, "reconnect");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  spawn(&p, "-s", hosts, "-t", "2000", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  for (i = 0; i < 12; i++) { /* a sync every P/2 = 0.14 T: 1.6 T */
    CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset-after-op 9", NULL, 0, 5000), 0);
    CU_ASSERT_EQUAL(proxyctl_wait_fired(px, T_WAIT), 0);
  }
  go(&p);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end"); /* no "sig 15" before it */
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT_EQUAL(read_all(p.err, err, sizeof err, T_WAIT), 0);
  if (err[0])
    fprintf(stderr, "\nzklock said: %s\n", err);
  cleanup(&p);
  proxyctl_stop(px);
  assert_no_node(name);
}

/* A grant on an old lease: nothing has proven the waiter's lease since its
 * session was opened (a waiter's beats are syncs alone: no write proves
 * them), and the holder's release reaches it through a watch. The library
 * waits for a fresher lease before it grants (lib/engine.c, grant_locked(),
 * CONFIRMING), so the command starts with at least half a lease. With a
 * 10 s session the lease is 9 s (T less a 1 s margin) from its anchor, a
 * fresh proof leaves 9 s - P = 6249 ms of it (P = 2751 ms: lib/lease.c),
 * and half of that is 3124 ms: the test keeps the lock 7 s after the
 * waiter said it queued, so that its anchor (the session's opening, before
 * that line) is older than 9 s - 3124 ms = 5876 ms even if the line took
 * 1.1 s to come. Without the wait at most 2 s would be left at the start.
 * That wait is the condition (an old lease), not a synchronisation; it
 * also is a window in which the waiter must say nothing (it must not be
 * granted). */
static void test_confirming(void) {
  char name[64], parent[128], line[512], msg[512];
  long long left = -1;
  const char *at;
  zkt_holder h;
  proc p;
  zkt_name(name, sizeof name, "confirm");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  spawn(&p, "-s", zkt_hosts(), "-t", "10000", "-q", "-v", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  CU_ASSERT(expect_verbose(p.err, "queued for ", msg, sizeof msg));
  CU_ASSERT_EQUAL(read_line(p.err, line, sizeof line, 7000), -1);
  zkt_unhold(&h);
  CU_ASSERT(expect_verbose(p.err, "granted ", msg, sizeof msg));
  CU_ASSERT(expect_verbose(p.err, "the lease has ", msg, sizeof msg));
  at = strstr(msg, "the lease has ");
  CU_ASSERT(at && sscanf(at, "the lease has %lld ms left", &left) == 1);
  printf("\n    the command started with %lld ms of a 9000 ms lease", left);
  CU_ASSERT(left >= 3124);
  CU_ASSERT(expect_verbose(p.err, "running ", msg, sizeof msg));
  CU_ASSERT(command_started(&p, line, sizeof line));
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* -v tells the session's states: a connection reset under the holder is
 * "suspended", then "reconnected", and the lock is kept. */
static void test_verbose_session(void) {
  char name[64], hosts[64], line[512], msg[512];
  proxyctl *px;
  int port;
  proc p;
  zkt_name(name, sizeof name, "vsession");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  spawn(&p, "-s", hosts, "-t", "4000", "-v", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT(expect_verbose(p.err, "running ", msg, sizeof msg));
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "reset", NULL, 0, 5000), 0);
  CU_ASSERT(expect_verbose(p.err, "session suspended", msg, sizeof msg));
  CU_ASSERT(expect_verbose(p.err, "session reconnected in the same session",
                           msg, sizeof msg));
  go(&p);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end"); /* no signal: the lock was kept */
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  proxyctl_stop(px);
  assert_no_node(name);
}

static const zkt_test tests[] = {
    {"lost lock: SIGTERM to the command, exit 4", test_lost_node_deleted},
    {"lost lock: SIGKILL after -k", test_lost_kill_after},
    {"partition: the lease runs out, exit 4", test_lease_partition},
    {"partition during -n: exit 3, not a wait", test_nonblock_partition},
    {"connections reset under a live session: the lease goes on",
     test_reconnects_keep_lease},
    {"a grant on an old lease is confirmed first", test_confirming},
    {"-v tells the session's states", test_verbose_session},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_lease", tests);
}
