/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_lease.c - zklock when the lock is lost: the node deleted, the
 * lease run out in a partition, and zklock itself frozen, when only its
 * watchdog can stop the command. The watchdog's life: it never outlives
 * the command or zklock, and stays quiet while zklock is healthy. See
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

#include "agentctl.h"
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

/* zklock frozen (SIGSTOP to zklock alone) while its command runs and
 * another zklock waits: the watchdog sends the command SIGTERM before the
 * other contender's command starts (the helpers' own records, on one
 * monotonic clock), and SIGKILL after -k, both while zklock is still
 * stopped. Resumed, zklock does not signal again, says what happened, and
 * exits 4; its watchdog is gone with it. */
static void test_frozen_zklock(void) {
  char name[64], parent[128], log[PATH_MAX], env_log[PATH_MAX + 16], line[512],
      err[4096], state[4], want[256];
  log_rec r[8];
  spawn_opts so;
  proc a, b;
  pid_t wd;
  pid_watch wdw, cmdw;
  int n, i, sigs = 0;
  long long a_term = 0, b_start = 0;
  zkt_name(name, sizeof name, "frozen");
  zkt_parent(parent, sizeof parent, name);
  log_name(log, sizeof log, name);
  snprintf(env_log, sizeof env_log, "CLITEST_LOG=%s", log);
  memset(&so, 0, sizeof so);
  so.tty = -1;
  so.env[0] = env_log;
  spawn_with(&a, &so, "-s", zkt_hosts(), "-t", "4000", "-k", "0.5", name, "--",
             HELPER("ignore-term"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  wd = find_watchdog(&a);
  CU_ASSERT_FATAL(wd > 0);
  watch_pid(&wdw, wd);
  watch_pid(&cmdw, (pid_t)a.helper);
  spawn_with(&b, &so, "-s", zkt_hosts(), "-t", "4000", "-q", name, "--",
             HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);

  CU_ASSERT_FATAL(stop_zklock(&a));
  /* the server expires the frozen session and b gets the lock */
  CU_ASSERT(command_started(&b, line, sizeof line));
  /* SIGKILL after -k, from the watchdog: zklock is still stopped */
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
  CU_ASSERT_STRING_EQUAL(proc_state(a.pid, state, sizeof state), "T");

  CU_ASSERT(kill(a.pid, SIGCONT) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(wait_pid_exit(&wdw, 0)); /* gone with zklock */
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: watchdog: lost the lock /locks/%s: the lease ran out "
           "with no renewal from zklock (pid %ld)",
           name, (long)a.pid);
  CU_ASSERT(strstr(err, want) == err);
  snprintf(want, sizeof want, "\nzklock: lost the lock /locks/%s: ", name);
  CU_ASSERT(strstr(err, want) != NULL);
  CU_ASSERT(strstr(err, "the watchdog has stopped the command\n") != NULL);
  /* it knows it was silent past the session timeout */
  CU_ASSERT(strstr(err, "at any moment") == NULL);
  if (!strstr(err, "the watchdog has stopped the command"))
    fprintf(stderr, "\nzklock said: %s\n", err);

  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  n = read_log(log, r, 8);
  unlink(log);
  for (i = 0; i < n; i++) {
    if (r[i].pid == a.helper && strcmp(r[i].what, "sig") == 0) {
      sigs++;
      CU_ASSERT_EQUAL(r[i].sig, SIGTERM);
      a_term = r[i].ns;
    }
    if (r[i].pid == b.helper && strcmp(r[i].what, "start") == 0)
      b_start = r[i].ns;
  }
  CU_ASSERT_EQUAL(sigs, 1); /* one SIGTERM: zklock did not send another */
  CU_ASSERT(a_term > 0 && b_start > 0);
  CU_ASSERT(a_term < b_start);
  unwatch_pid(&wdw);
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* The command exits while zklock is stopped: the watchdog exits too (it
 * never outlives the command), and zklock, resumed in time, exits 0. */
static void test_watchdog_ends_with_command(void) {
  char name[64], line[512], state[4];
  int status;
  int64_t stopped_at, stopped_ms;
  proc p;
  pid_t wd;
  pid_watch wdw, cmdw;
  zkt_name(name, sizeof name, "wdend");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  wd = find_watchdog(&p);
  CU_ASSERT_FATAL(wd > 0);
  watch_pid(&wdw, wd);
  watch_pid(&cmdw, (pid_t)p.helper);
  stopped_at = zkt_now_ms();
  CU_ASSERT_FATAL(stop_zklock(&p));
  go(&p);
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
  CU_ASSERT(wait_pid_exit(&wdw, T_WAIT));
  CU_ASSERT_STRING_EQUAL(proc_state(p.pid, state, sizeof state), "T");
  CU_ASSERT(kill(p.pid, SIGCONT) == 0);
  stopped_ms = zkt_now_ms() - stopped_at;
  status = wait_exit(&p, T_WAIT);
  CU_ASSERT_EQUAL(status, 0);
  if (status != 0) { /* what zklock said, for the log */
    char err[2048] = "";
    if (p.err >= 0)
      read_all(p.err, err, sizeof err, 1000); /* terminated even if cut */
    fprintf(stderr,
            "\n    zklock, stopped for %lld ms, exited %d, saying:\n%s\n",
            (long long)stopped_ms, status, err);
  }
  unwatch_pid(&wdw);
  unwatch_pid(&cmdw);
  cleanup(&p);
  assert_no_node(name);
}

/* zklock killed outright: the watchdog dies with it, and the command gets
 * SIGTERM (its parent-death signal); the session expires and the lock
 * moves on. */
static void test_watchdog_dies_with_zklock(void) {
  char name[64], line[512];
  proc p;
  pid_t wd;
  pid_watch wdw;
  zkt_name(name, sizeof name, "wddie");
  spawn(&p, "-s", zkt_hosts(), "-t", "2000", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  wd = find_watchdog(&p);
  CU_ASSERT_FATAL(wd > 0);
  watch_pid(&wdw, wd);
  CU_ASSERT(kill(p.pid, SIGKILL) == 0);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + SIGKILL);
  CU_ASSERT(wait_pid_exit(&wdw, T_WAIT));
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  unwatch_pid(&wdw);
  cleanup(&p);
  assert_no_node(name);
}

/* The watchdog killed (SIGKILL) while the command runs: zklock starts
 * another in its place at once and says so, and that one stops the command
 * when zklock is then stopped past its lease, as the first would have. */
static void test_watchdog_replaced(void) {
  char name[64], line[512], err[4096], want[256], state[4];
  proc p;
  pid_t wd, wd2 = 0;
  long said = 0;
  pid_watch wdw, cmdw;
  zkt_name(name, sizeof name, "wdkilled");
  spawn(&p, "-s", zkt_hosts(), "-t", "2000", "-k", "0.5", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  wd = find_watchdog(&p);
  CU_ASSERT(wd > 0);
  if (wd > 0) {
    watch_pid(&wdw, wd);
    CU_ASSERT(kill(wd, SIGKILL) == 0);
    CU_ASSERT(wait_pid_exit(&wdw, T_WAIT));
    unwatch_pid(&wdw);
    CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
    snprintf(want, sizeof want,
             "zklock: the watchdog (pid %ld) died (signal 9); another took "
             "its place (pid %%ld)",
             (long)wd);
    CU_ASSERT_EQUAL(sscanf(line, want, &said), 1);
    wd2 = find_watchdog(&p);
    zkt_check(wd2 > 0 && wd2 != wd && said == (long)wd2,
              "zklock said \"%s\"; its watchdog now: pid %ld", line,
              (long)wd2);
  }
  if (wd > 0) {
    watch_pid(&cmdw, (pid_t)p.helper);
    CU_ASSERT_FATAL(stop_zklock(&p));
    /* the new watchdog stops the command while zklock is stopped */
    CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
    CU_ASSERT_STRING_EQUAL(line, "sig 15");
    CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
    CU_ASSERT_STRING_EQUAL(proc_state(p.pid, state, sizeof state), "T");
    unwatch_pid(&cmdw);
    CU_ASSERT(kill(p.pid, SIGCONT) == 0);
    CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
    CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
    snprintf(want, sizeof want,
             "zklock: watchdog: lost the lock /locks/%s: the lease ran out "
             "with no renewal from zklock (pid %ld)",
             name, (long)p.pid);
    zkt_check(strstr(err, want) == err, "zklock said:\n%s\nnot first:\n%s",
              err, want);
  }
  cleanup(&p);
  assert_no_node(name);
}

/* A replacement watchdog that dies at once is not replaced again (it
 * would die too): zklock stops the command, as on a loss, and exits 4. */
static void test_watchdog_keeps_dying(void) {
  char name[64], line[512], want[512];
  proc p;
  pid_t wd, wd2 = 0;
  pid_watch wdw;
  zkt_name(name, sizeof name, "wddying");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  wd = find_watchdog(&p);
  CU_ASSERT(wd > 0);
  if (wd > 0) {
    watch_pid(&wdw, wd);
    CU_ASSERT(kill(wd, SIGKILL) == 0);
    CU_ASSERT(wait_pid_exit(&wdw, T_WAIT));
    unwatch_pid(&wdw);
    CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
    wd2 = find_watchdog(&p);
    CU_ASSERT(wd2 > 0 && wd2 != wd);
  }
  if (wd2 > 0 && wd2 != wd) {
    /* at once: well within the 2 s a replacement must live */
    CU_ASSERT(kill(wd2, SIGKILL) == 0);
    CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
    snprintf(want, sizeof want,
             "zklock: the watchdog (pid %ld) died (signal 9) and cannot be "
             "replaced (it keeps dying): nothing would stop the command "
             "should zklock be stopped; stopping the command",
             (long)wd2);
    CU_ASSERT_STRING_EQUAL(line, want);
    CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
    CU_ASSERT_STRING_EQUAL(line, "sig 15");
    CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  }
  cleanup(&p);
  assert_no_node(name);
}

/* A healthy zklock renews the lease: the watchdog stays quiet through
 * several session timeouts. The bounded read below is an observation
 * window (nothing must arrive in it), not a synchronisation: with -t 1000
 * the deadline would have passed four times over without renewals. */
static void test_watchdog_quiet_when_healthy(void) {
  char name[64], line[512], err[1024];
  proc p;
  zkt_name(name, sizeof name, "wdquiet");
  spawn(&p, "-s", zkt_hosts(), "-t", "1000", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT(find_watchdog(&p) > 0);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, 4000), -1);
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT_EQUAL(read_all(p.err, err, sizeof err, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* Connections reset under a healthy session, again and again, each time
 * right after one of the lease's syncs reached the server, so that its
 * answer is lost: the client reconnects in the same session, and the
 * reconnect itself (the server revalidated the session with the leader)
 * and the write that follows it prove the lease (lib/lease.c), so the
 * lease goes on, and neither zklock nor its watchdog touches the command,
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


/* Through the agent (zklockd): zklock frozen while it holds. The agent's
 * session lives on, so nothing expires: the watchdog stops the command at
 * the deadline zklock last heard of, and the agent, hearing nothing from
 * zklock for a session timeout, frees the lock once that deadline has
 * passed; the next zklock starts after the command was stopped. */
static void test_frozen_zklock_agent(void) {
  char name[64], parent[128], log[PATH_MAX], env_log[PATH_MAX + 16], line[512],
      err[4096], want[256];
  log_rec r[8];
  spawn_opts so;
  proc a, b;
  agentctl ag;
  pid_watch cmdw;
  int n, i;
  long long a_term = 0, b_start = 0;
  const char *const extra[] = {"-t", "4s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "frozen-agent");
  zkt_parent(parent, sizeof parent, name);
  log_name(log, sizeof log, name);
  snprintf(env_log, sizeof env_log, "CLITEST_LOG=%s", log);
  memset(&so, 0, sizeof so);
  so.tty = -1;
  so.env[0] = env_log;
  spawn_with(&a, &so, "--agent", ag.sock, "-k", "0.5", name, "--",
             HELPER("ignore-term"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&cmdw, (pid_t)a.helper);
  spawn_with(&b, &so, "--agent", ag.sock, "-q", name, "--", HELPER("hold"),
             NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);

  CU_ASSERT_FATAL(stop_zklock(&a));
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT)); /* the watchdog's SIGKILL */
  CU_ASSERT(command_started(&b, line, sizeof line));
  CU_ASSERT(kill(a.pid, SIGCONT) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  snprintf(want, sizeof want, "zklock: watchdog: lost the lock /locks/%s: ",
           name);
  CU_ASSERT(strstr(err, want) == err);
  if (strstr(err, want) != err) {
    fprintf(stderr, "\nzklock said: %s\n", err);
    agentctl_print_log(&ag);
  }
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  n = read_log(log, r, 8);
  unlink(log);
  for (i = 0; i < n; i++) {
    if (r[i].pid == a.helper && strcmp(r[i].what, "sig") == 0)
      a_term = r[i].ns;
    if (r[i].pid == b.helper && strcmp(r[i].what, "start") == 0)
      b_start = r[i].ns;
  }
  CU_ASSERT(a_term > 0 && b_start > 0);
  CU_ASSERT(a_term < b_start);
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

/* Through the agent: zklock SIGKILLed while it holds (its command too).
 * The agent's session is of 10 minutes: only the end of zklock's
 * connection can free the lock, and it does at once. */
static void test_killed_zklock_agent(void) {
  char name[64], parent[128], line[512];
  proc a, b;
  agentctl ag;
  const char *const extra[] = {"-t", "600s", NULL};
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "killed-agent");
  zkt_parent(parent, sizeof parent, name);
  spawn(&a, "--agent", ag.sock, name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  spawn(&b, "--agent", ag.sock, "-q", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  kill(a.pid, SIGKILL); /* zklock first: its command lives on, orphaned */
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 128 + SIGKILL);
  kill((pid_t)a.helper, SIGKILL);
  if (!command_started(&b, line, sizeof line)) {
    char err[8192];
    CU_FAIL("the next zklock did not start");
    kill(b.pid, SIGTERM);
    read_all(b.err, err, sizeof err, T_WAIT);
    printf("\nthe next zklock said: %s\n", err);
    agentctl_print_log(&ag);
  }
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

static const zkt_test tests[] = {
    {"lost lock: SIGTERM to the command, exit 4", test_lost_node_deleted},
    {"lost lock: SIGKILL after -k", test_lost_kill_after},
    {"partition: the lease runs out, exit 4", test_lease_partition},
    {"partition during -n: exit 3, not a wait", test_nonblock_partition},
    {"zklock frozen: the watchdog stops the command before the next grant",
     test_frozen_zklock},
    {"the watchdog ends with the command, even with zklock stopped",
     test_watchdog_ends_with_command},
    {"the watchdog dies with zklock", test_watchdog_dies_with_zklock},
    {"a killed watchdog is replaced, and the new one stops the command",
     test_watchdog_replaced},
    {"a watchdog that keeps dying: the command is stopped, exit 4",
     test_watchdog_keeps_dying},
    {"the watchdog stays quiet while zklock is healthy",
     test_watchdog_quiet_when_healthy},
    {"connections reset under a live session: the lease goes on",
     test_reconnects_keep_lease},
    {"a grant on an old lease is confirmed first", test_confirming},
    {"-v tells the session's states", test_verbose_session},
    {"zklock frozen through the agent: the watchdog, then the next",
     test_frozen_zklock_agent},
    {"zklock SIGKILLed through the agent: the next at once",
     test_killed_zklock_agent},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_lease", tests);
}
