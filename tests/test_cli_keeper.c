/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_keeper.c - zklock's keeper, the command's parent, which keeps
 * every process of the command under the lock: the lock passes on only
 * once the last of them is gone, whether zklock is healthy, frozen, killed
 * outright, or its keeper is; through zklockd as directly. See clitest.h
 * for how zklock and its command are run; an overlap is seen by the next
 * holder's command itself, which looks, as it starts, at whether the
 * processes of the previous holder still run (CLITEST_GONE). */
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

/* "start PID ... alive=LIST": LIST ("-": none of the processes it was
 * told of ran as it started). */
static const char *alive_at_start(const char *line) {
  const char *at = strstr(line, " alive=");
  return at ? at + 7 : "(not said)";
}

/* sh -c STRING with the helper: "'HELPER' --helper MODE" put in fmt's %s. */
static void helper_sh(char *buf, size_t len, const char *fmt,
                      const char *mode) {
  char helper[PATH_MAX + 64];
  snprintf(helper, sizeof helper, "'%s' --helper %s", clit_self_exe, mode);
  snprintf(buf, len, fmt, helper);
}

/* Starts the next holder b on name, behind the holder, with the processes
 * in gone to look for as it starts; waits until it is queued. */
static void spawn_next(proc *b, const char *const *how, const char *name,
                       const char *gone, const char *log) {
  static char env_gone[1024], env_log[PATH_MAX + 16];
  const char *args[16];
  char parent[128];
  spawn_opts so;
  int n = 0;
  memset(&so, 0, sizeof so);
  so.tty = -1;
  snprintf(env_gone, sizeof env_gone, "CLITEST_GONE=%s", gone);
  so.env[0] = env_gone;
  if (log) {
    snprintf(env_log, sizeof env_log, "CLITEST_LOG=%s", log);
    so.env[1] = env_log;
  }
  while (*how)
    args[n++] = *how++;
  args[n++] = "-q";
  args[n++] = name;
  args[n++] = "--";
  args[n++] = clit_self_exe;
  args[n++] = "--helper";
  args[n++] = "hold";
  args[n] = NULL;
  spawn_argv(b, &so, args);
  zkt_parent(parent, sizeof parent, name);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
}

/* The next holder's command started, and nothing of the previous holder
 * ran as it did. */
static void assert_next_alone(proc *b) {
  char line[512];
  CU_ASSERT_FATAL(command_started(b, line, sizeof line));
  zkt_check(strcmp(alive_at_start(line), "-") == 0,
            "the next holder's command started while those of the previous "
            "holder still ran: %s",
            alive_at_start(line));
}

/* ------------------------------------------------------------------------ */

/* zklock SIGKILLed while its command (sh -c '... & wait') has a child of
 * its own, in its process group or in a session of its own (setsid): the
 * keeper stops them all (the kernel only ever told sh, the command's
 * parent being gone), and the next holder's command starts after the last
 * is gone. Directly the next grant comes once the session has expired;
 * through zklockd (its session of 10 minutes), at once when the keeper
 * has ended. */
static void killed_with_tree(bool agent, bool setsid) {
  char name[64], line[512], cmd[PATH_MAX + 128], gone[256] = "";
  const char *agent_how[] = {"--agent", NULL, NULL};
  const char *direct_how[] = {"-s", zkt_hosts(), "-t", "2000", NULL};
  const char *const extra[] = {"-t", "600s", NULL};
  const char *const *how = agent ? agent_how : direct_how;
  proc a, b;
  agentctl ag;
  pid_t sh, child;
  pid_watch shw, childw;
  if (agent) {
    CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
    agent_how[1] = ag.sock;
  }
  zkt_name(name, sizeof name, setsid ? "killed-setsid" : "killed-tree");
  helper_sh(cmd, sizeof cmd, setsid ? "setsid %s & wait" : "%s & wait",
            "hold");
  if (agent)
    spawn(&a, "--agent", ag.sock, "-c", cmd, name, NULL);
  else
    spawn(&a, "-s", zkt_hosts(), "-t", "2000", "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  child = (pid_t)a.helper;
  sh = proc_parent(child);
  CU_ASSERT_FATAL(sh > 1);
  watch_pid(&shw, sh);
  watch_pid(&childw, child);
  gone_entry(gone, sizeof gone, sh);
  gone_entry(gone, sizeof gone, child);
  spawn_next(&b, how, name, gone, NULL);

  CU_ASSERT(kill(a.pid, SIGKILL) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 128 + SIGKILL);
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&shw, 0));
  CU_ASSERT(wait_pid_exit(&childw, 0));
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15"); /* told, not just killed */
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&shw);
  unwatch_pid(&childw);
  cleanup(&a);
  cleanup(&b);
  if (agent)
    CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

static void test_killed_tree(void) { killed_with_tree(false, false); }
static void test_killed_setsid(void) { killed_with_tree(false, true); }
static void test_killed_tree_agent(void) { killed_with_tree(true, false); }
static void test_killed_setsid_agent(void) { killed_with_tree(true, true); }

/* zklock SIGKILLed while its command takes its time over SIGTERM: through
 * zklockd (-k 30, 500 ms in the handler), the next holder's command starts
 * only after the command has ended (the helpers' records, on one clock);
 * directly (-t 2000, -k 30, 10 s in the handler: longer than the session),
 * SIGKILL ends it by the hard stop, before the session could expire. */
static void killed_slow_term(bool agent) {
  char name[64], line[512], log[PATH_MAX], env_log[PATH_MAX + 16],
      gone[256] = "";
  const char *agent_how[] = {"--agent", NULL, NULL};
  const char *direct_how[] = {"-s", zkt_hosts(), "-t", "2000", NULL};
  const char *const extra[] = {"-t", "600s", NULL};
  log_rec r[8];
  spawn_opts so;
  proc a, b;
  agentctl ag;
  pid_watch cmdw;
  int n, i;
  long long a_end = 0, b_start = 0;
  if (agent) {
    CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
    agent_how[1] = ag.sock;
  }
  zkt_name(name, sizeof name, agent ? "slow-term-agent" : "slow-term");
  log_name(log, sizeof log, name);
  snprintf(env_log, sizeof env_log, "CLITEST_LOG=%s", log);
  memset(&so, 0, sizeof so);
  so.tty = -1;
  so.env[0] = env_log;
  if (agent)
    spawn_with(&a, &so, "--agent", ag.sock, "-k", "30", name, "--",
               HELPER("slow-term"), "500", NULL);
  else
    spawn_with(&a, &so, "-s", zkt_hosts(), "-t", "2000", "-k", "30", name,
               "--", HELPER("slow-term"), "10000", NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&cmdw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, agent ? agent_how : direct_how, name, gone, log);

  CU_ASSERT(kill(a.pid, SIGKILL) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 128 + SIGKILL);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&cmdw, 0));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  n = read_log(log, r, 8);
  unlink(log);
  for (i = 0; i < n; i++) {
    if (r[i].pid == a.helper && strcmp(r[i].what, "end") == 0)
      a_end = r[i].ns;
    if (r[i].pid == b.helper && strcmp(r[i].what, "start") == 0)
      b_start = r[i].ns;
  }
  CU_ASSERT(b_start > 0);
  if (agent) { /* it ended by itself, before the next one started */
    CU_ASSERT(a_end > 0 && a_end < b_start);
  } else { /* SIGKILL by the hard stop: no end of its own */
    CU_ASSERT_EQUAL(a_end, 0);
  }
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  if (agent)
    CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

static void test_killed_slow_term(void) { killed_slow_term(false); }
static void test_killed_slow_term_agent(void) { killed_slow_term(true); }

/* A command that ignores SIGTERM, with -k 30, when the lease runs out in a
 * partition: SIGKILL comes by the hard stop (D plus half the margin), not
 * 30 s after SIGTERM, so the command is gone before the session can
 * expire and the next holder start; zklock exits 4. */
static void test_kill_after_capped(void) {
  char name[64], hosts[64], line[512], gone[128] = "", err[4096];
  const char *how[] = {"-s", zkt_hosts(), "-t", "2000", NULL};
  proxyctl *px;
  int port;
  proc a, b;
  pid_watch cmdw;
  zkt_name(name, sizeof name, "capped");
  CU_ASSERT_FATAL(proxyctl_start(&px, PROXY, zkt_hosts(), &port) == 0);
  snprintf(hosts, sizeof hosts, "127.0.0.1:%d", port);
  spawn(&a, "-s", hosts, "-t", "2000", "-k", "30", "-v", name, "--",
        HELPER("ignore-term"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&cmdw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, how, name, gone, NULL);
  CU_ASSERT_EQUAL(proxyctl_cmd(px, "drop", NULL, 0, 5000), 0);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15"); /* ... and it went on */
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  assert_next_alone(&b);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  zkt_check(strstr(err, "(-k cut to what the lease leaves)") != NULL,
            "zklock -v said: %s", err);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  proxyctl_stop(px);
  assert_no_node(name);
}

/* zklock frozen (SIGSTOP) with a command that ignores SIGTERM, -k 30: the
 * keeper, on its own, sends SIGTERM and then SIGKILL by the hard stop, so
 * the command is gone before the next holder's starts. */
static void test_frozen_kill_capped(void) {
  char name[64], line[512], gone[128] = "";
  const char *how[] = {"-s", zkt_hosts(), "-t", "4000", NULL};
  proc a, b;
  pid_watch cmdw;
  zkt_name(name, sizeof name, "frozen-capped");
  spawn(&a, "-s", zkt_hosts(), "-t", "4000", "-k", "30", name, "--",
        HELPER("ignore-term"), NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&cmdw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, how, name, gone, NULL);
  CU_ASSERT_FATAL(stop_zklock(&a));
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&cmdw, 0));
  CU_ASSERT(kill(a.pid, SIGCONT) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* The command exits at once, leaving a process running ('(... &)'): the
 * lock stays held until that process ends, as an inherited descriptor
 * keeps flock(1)'s lock, and -v says so; then zklock releases and exits
 * with the command's status. */
static void test_left_behind(void) {
  char name[64], line[512], cmd[PATH_MAX + 128], gone[128] = "", msg[512];
  const char *how[] = {"-s", zkt_hosts(), NULL};
  proc a, b;
  zkt_name(name, sizeof name, "left");
  helper_sh(cmd, sizeof cmd, "(%s &)", "hold");
  spawn(&a, "-s", zkt_hosts(), "-v", "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  CU_ASSERT(expect_verbose(a.err, "the command exited (status 0), leaving "
                                  "processes running",
                           msg, sizeof msg));
  spawn_next(&b, how, name, gone, NULL);
  CU_ASSERT_EQUAL(wait_exit(&a, 0), -1); /* still holding */
  go(&a); /* the process left behind ends */
  assert_next_alone(&b);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* The keeper SIGKILLed while the command runs, with a child in a session
 * of its own: zklock, their subreaper now, says so, stops them all
 * (SIGTERM reaches the child too) and exits 4 once they are gone. */
static void test_keeper_killed(void) {
  char name[64], line[512], cmd[PATH_MAX + 128], want[256];
  proc p;
  pid_t keeper, sh, child;
  pid_watch kw, shw, childw;
  zkt_name(name, sizeof name, "keeper-killed");
  helper_sh(cmd, sizeof cmd, "setsid %s & wait", "hold");
  spawn(&p, "-s", zkt_hosts(), "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  child = (pid_t)p.helper;
  sh = proc_parent(child);
  keeper = find_keeper(&p);
  CU_ASSERT_FATAL(keeper > 0 && sh > 1 && proc_parent(sh) == keeper);
  watch_pid(&kw, keeper);
  watch_pid(&shw, sh);
  watch_pid(&childw, child);
  CU_ASSERT(kill(keeper, SIGKILL) == 0);
  CU_ASSERT(wait_pid_exit(&kw, T_WAIT));
  CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: the keeper (pid %ld) died (signal 9): nothing would stop "
           "the command's processes should zklock be killed; stopping them",
           (long)keeper);
  CU_ASSERT_STRING_EQUAL(line, want);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(wait_pid_exit(&shw, 0));
  CU_ASSERT(wait_pid_exit(&childw, 0));
  unwatch_pid(&kw);
  unwatch_pid(&shw);
  unwatch_pid(&childw);
  cleanup(&p);
  assert_no_node(name);
}

/* zklockd stopped (SIGTERM) while zklock holds, its command's child in a
 * session of its own and slow over SIGTERM (500 ms): zklock is told
 * (ZKL_LOST_AGENT), its keeper stops every process, and only once they
 * are gone does zklock release and the agent delete the node; the next
 * holder (a session of its own) starts after the child has ended. */
static void test_agent_stop(void) {
  char name[64], line[512], cmd[PATH_MAX + 128], gone[256] = "", err[4096];
  const char *how[] = {"-s", zkt_hosts(), NULL};
  const char *const extra[] = {"-t", "600s", NULL};
  proc a, b;
  agentctl ag;
  pid_watch childw;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, "agent-stop");
  helper_sh(cmd, sizeof cmd, "setsid %s & wait", "slow-term 500");
  spawn(&a, "--agent", ag.sock, "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&childw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, proc_parent((pid_t)a.helper));
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, how, name, gone, NULL);
  agentctl_signal(&ag, SIGTERM);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&childw, 0));
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  zkt_check(strstr(err, "zklockd stopped or went away") != NULL,
            "zklock said: %s", err);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&childw);
  cleanup(&a);
  cleanup(&b);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

/* --max-hold running out, the command's child in a session of its own and
 * slow over SIGTERM (500 ms): the child is told too, and the node goes
 * only once it has ended; zklock exits 4. */
static void test_max_hold_tree(void) {
  char name[64], line[512], cmd[PATH_MAX + 128], gone[256] = "", err[4096];
  const char *how[] = {"-s", zkt_hosts(), NULL};
  proc a, b;
  pid_watch childw;
  zkt_name(name, sizeof name, "max-hold-tree");
  helper_sh(cmd, sizeof cmd, "setsid %s & wait", "slow-term 500");
  spawn(&a, "-s", zkt_hosts(), "--max-hold", "2s", "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&childw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, proc_parent((pid_t)a.helper));
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, how, name, gone, NULL);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&childw, 0));
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  zkt_check(strstr(err, "(--max-hold)") != NULL, "zklock said: %s", err);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&childw);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* A break (--break, a grace of 30 s) while zklock holds, its command's
 * child in a session of its own and slow over SIGTERM (500 ms): at the
 * break's mark zklock stops every process, as on a loss, and releases once
 * they are gone, within the grace: the breaker finds the holder let go
 * (exit 1), the next holder starts after the child has ended, zklock exits
 * 4 saying the lock is being broken. Directly and through zklockd. */
static void broken_tree(bool agent) {
  char name[64], line[512], cmd[PATH_MAX + 128], gone[256] = "", err[4096];
  const char *how[] = {"-s", zkt_hosts(), NULL};
  const char *const extra[] = {"-t", "600s", NULL};
  proc a, b, brk;
  agentctl ag;
  pid_watch childw;
  if (agent)
    CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), extra));
  zkt_name(name, sizeof name, agent ? "broken-agent" : "broken");
  helper_sh(cmd, sizeof cmd, "setsid %s & wait", "slow-term 500");
  if (agent)
    spawn(&a, "--agent", ag.sock, "-c", cmd, name, NULL);
  else
    spawn(&a, "-s", zkt_hosts(), "-c", cmd, name, NULL);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  watch_pid(&childw, (pid_t)a.helper);
  gone_entry(gone, sizeof gone, proc_parent((pid_t)a.helper));
  gone_entry(gone, sizeof gone, (pid_t)a.helper);
  spawn_next(&b, how, name, gone, NULL);
  spawn(&brk, "-s", zkt_hosts(), "--break", name, "--grace", "30s", NULL);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  assert_next_alone(&b);
  CU_ASSERT(wait_pid_exit(&childw, 0));
  CU_ASSERT_EQUAL(wait_exit(&brk, T_WAIT), 1); /* it let go in the grace */
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  zkt_check(strstr(err, "it is being broken (zklock --break)") != NULL,
            "zklock said: %s", err);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  unwatch_pid(&childw);
  cleanup(&a);
  cleanup(&b);
  cleanup(&brk);
  if (agent)
    CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
}

static void test_broken_tree(void) { broken_tree(false); }
static void test_broken_tree_agent(void) { broken_tree(true); }

/* ------------------------------------------------- moved from test_cli_lease */

/* zklock frozen (SIGSTOP to zklock alone) while its command runs and
 * another zklock waits: the keeper sends the command SIGTERM before the
 * other contender's command starts (the helpers' own records, on one
 * monotonic clock), and SIGKILL after -k, both while zklock is still
 * stopped. Resumed, zklock does not signal again, says what happened, and
 * exits 4; its keeper is gone by then. */
static void test_frozen_zklock(void) {
  char name[64], parent[128], log[PATH_MAX], env_log[PATH_MAX + 16], line[512],
      err[4096], state[4], want[256];
  log_rec r[8];
  spawn_opts so;
  proc a, b;
  pid_t kp;
  pid_watch kw, cmdw;
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
  kp = find_keeper(&a);
  CU_ASSERT_FATAL(kp > 0);
  watch_pid(&kw, kp);
  watch_pid(&cmdw, (pid_t)a.helper);
  spawn_with(&b, &so, "-s", zkt_hosts(), "-t", "4000", "-q", name, "--",
             HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);

  CU_ASSERT_FATAL(stop_zklock(&a));
  /* the server expires the frozen session and b gets the lock */
  CU_ASSERT(command_started(&b, line, sizeof line));
  /* SIGKILL after -k, from the keeper: zklock is still stopped */
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
  CU_ASSERT_STRING_EQUAL(proc_state(a.pid, state, sizeof state), "T");

  CU_ASSERT(kill(a.pid, SIGCONT) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(wait_pid_exit(&kw, 0)); /* gone before zklock */
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: keeper: lost the lock /locks/%s: the lease ran out "
           "with no renewal from zklock (pid %ld)",
           name, (long)a.pid);
  CU_ASSERT(strstr(err, want) == err);
  snprintf(want, sizeof want, "\nzklock: lost the lock /locks/%s: ", name);
  CU_ASSERT(strstr(err, want) != NULL);
  CU_ASSERT(strstr(err, "the keeper has stopped the command\n") != NULL);
  /* it knows it was silent past the session timeout */
  CU_ASSERT(strstr(err, "at any moment") == NULL);
  if (!strstr(err, "the keeper has stopped the command"))
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
  unwatch_pid(&kw);
  unwatch_pid(&cmdw);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);
}

/* The command exits while zklock is stopped: the keeper exits too (the
 * last process is gone), and zklock, resumed in time, exits 0. */
static void test_keeper_ends_with_command(void) {
  char name[64], line[512], state[4];
  int status;
  int64_t stopped_at, stopped_ms;
  proc p;
  pid_t kp;
  pid_watch kw, cmdw;
  zkt_name(name, sizeof name, "kpend");
  spawn(&p, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  kp = find_keeper(&p);
  CU_ASSERT_FATAL(kp > 0);
  watch_pid(&kw, kp);
  watch_pid(&cmdw, (pid_t)p.helper);
  stopped_at = zkt_now_ms();
  CU_ASSERT_FATAL(stop_zklock(&p));
  go(&p);
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT));
  CU_ASSERT(wait_pid_exit(&kw, T_WAIT));
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
  unwatch_pid(&kw);
  unwatch_pid(&cmdw);
  cleanup(&p);
  assert_no_node(name);
}

/* zklock killed outright: the keeper outlives it, says so, sends the
 * command SIGTERM at once, and ends once the command is gone; the session
 * expires and the lock moves on. */
static void test_keeper_outlives_zklock(void) {
  char name[64], line[512], want[256];
  proc p;
  pid_t kp;
  pid_watch kw;
  zkt_name(name, sizeof name, "kpdie");
  spawn(&p, "-s", zkt_hosts(), "-t", "2000", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  kp = find_keeper(&p);
  CU_ASSERT_FATAL(kp > 0);
  watch_pid(&kw, kp);
  CU_ASSERT(kill(p.pid, SIGKILL) == 0);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 128 + SIGKILL);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT(wait_pid_exit(&kw, T_WAIT));
  CU_ASSERT(read_line(p.err, line, sizeof line, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: keeper: zklock (pid %ld) is gone, and with it the lock "
           "/locks/%s: SIGTERM sent to the command (pid %ld)",
           (long)p.pid, name, p.helper);
  zkt_check(strncmp(line, want, strlen(want)) == 0, "the keeper said: %s",
            line);
  unwatch_pid(&kw);
  cleanup(&p);
  assert_no_node(name);
}

/* A healthy zklock renews the lease: the keeper stays quiet through
 * several session timeouts. The bounded read below is an observation
 * window (nothing must arrive in it), not a synchronisation: with -t 1000
 * the deadline would have passed four times over without renewals. */
static void test_keeper_quiet_when_healthy(void) {
  char name[64], line[512], err[1024];
  proc p;
  zkt_name(name, sizeof name, "kpquiet");
  spawn(&p, "-s", zkt_hosts(), "-t", "1000", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_FATAL(command_started(&p, line, sizeof line));
  CU_ASSERT(find_keeper(&p) > 0);
  CU_ASSERT_EQUAL(read_line(p.report, line, sizeof line, 4000), -1);
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT_EQUAL(read_all(p.err, err, sizeof err, T_WAIT), 0);
  cleanup(&p);
  assert_no_node(name);
}

/* Through the agent (zklockd): zklock frozen while it holds. The agent's
 * session lives on, so nothing expires: the keeper stops the command at
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
  CU_ASSERT(wait_pid_exit(&cmdw, T_WAIT)); /* the keeper's SIGKILL */
  CU_ASSERT(command_started(&b, line, sizeof line));
  CU_ASSERT(kill(a.pid, SIGCONT) == 0);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 4);
  CU_ASSERT(read_all(a.err, err, sizeof err, T_WAIT) > 0);
  snprintf(want, sizeof want, "zklock: keeper: lost the lock /locks/%s: ",
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
 * connection, and then of its keeper, can free the lock, and they do at
 * once. */
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
    {"zklock SIGKILLed: its command's child is stopped before the next "
     "holder's command starts",
     test_killed_tree},
    {"zklock SIGKILLed: its command's setsid child too", test_killed_setsid},
    {"zklock SIGKILLed through zklockd: the command's child is gone first",
     test_killed_tree_agent},
    {"zklock SIGKILLed through zklockd: the command's setsid child too",
     test_killed_setsid_agent},
    {"zklock SIGKILLed, a slow SIGTERM handler: SIGKILL by the hard stop",
     test_killed_slow_term},
    {"zklock SIGKILLed through zklockd, a slow SIGTERM handler: the next "
     "after its end",
     test_killed_slow_term_agent},
    {"-k 30 after a partition: SIGKILL by the hard stop", test_kill_after_capped},
    {"zklock frozen, -k 30: the keeper's SIGKILL by the hard stop",
     test_frozen_kill_capped},
    {"the command exits leaving a process: held until it ends",
     test_left_behind},
    {"the keeper SIGKILLed: zklock stops every process, exit 4",
     test_keeper_killed},
    {"zklockd stopped: every process told and gone before the node goes",
     test_agent_stop},
    {"--max-hold: every process told and gone before the node goes",
     test_max_hold_tree},
    {"a break's mark: every process stopped, then let go in the grace",
     test_broken_tree},
    {"a break's mark through zklockd: the same", test_broken_tree_agent},
    {"zklock frozen: the keeper stops the command before the next grant",
     test_frozen_zklock},
    {"the keeper ends with the command, even with zklock stopped",
     test_keeper_ends_with_command},
    {"zklock killed: the keeper stops the command, then ends",
     test_keeper_outlives_zklock},
    {"the keeper stays quiet while zklock is healthy",
     test_keeper_quiet_when_healthy},
    {"zklock frozen through the agent: the keeper, then the next",
     test_frozen_zklock_agent},
    {"zklock SIGKILLed through the agent: the next at once",
     test_killed_zklock_agent},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_keeper", tests);
}
