/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_agent.c - zklock's questions through zklockd (--agent): --list
 * (table, json, an overview), --leader, --revoke and --break answer what
 * they answer on a session of their own, against a real ZooKeeper and a
 * real agent (tests/agentctl); --watch lists through the agent too, under
 * its policy (test_agent_security: what a refused user sees). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "agentctl.h"
#include "clitest.h"

#define OUT 8192

static void on_revoke_count(zkl_lock *l, void *arg) {
  (void)l;
  zkt_counter_add(arg, 1);
}

static void test_questions(void) {
  agentctl ag;
  zkl_session *d;
  zkl_lock *held, *cand;
  zkt_counter revoked;
  zkt_rec lost;
  char name[64], ename[64], path[ZKL_PATH_MAX];
  static char out_a[OUT], out_d[OUT], err[OUT];
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  d = zkt_session(10000);
  zkt_name(name, sizeof name, "cli-agent");
  zkt_name(ename, sizeof ename, "cli-agent-lead");
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&held, d, name), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_owner_info(held, "held directly"), ZKL_OK);
  zkt_counter_init(&revoked);
  zkt_rec_init(&lost);
  zkl_lock_on_revoke(held, on_revoke_count, &revoked);
  zkl_lock_on_lost(held, zkt_on_lost, &lost);
  CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(held, path, sizeof path), ZKL_OK);

  /* --list NAME: the same table. */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--list", name, NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", name, NULL},
                               out_d, OUT, err, OUT),
                  0);
  CU_ASSERT_STRING_EQUAL(out_a, out_d);
  CU_ASSERT_PTR_NOT_NULL(strstr(out_a, path));
  CU_ASSERT_PTR_NOT_NULL(strstr(out_a, "held directly"));
  /* --format json, and an overview of a prefix (both through find and
   * list). */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--list", name,
                                                     "--format", "json", NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out_a, path));
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--list", "/",
                                                     "--format", "json", NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out_a, name));
  if (!strstr(out_a, name))
    printf("%s\n%s\n", out_a, err);

  /* --list --watch: lists through the agent, with no session of its own;
   * its first drawing has the holder. */
  {
    proc w;
    char line[1024], want[128];
    bool seen = false;
    snprintf(want, sizeof want, "%s\tmutex\t", name);
    spawn(&w, "--agent", ag.sock, "-v", "-H", "--list", name, "--watch",
          NULL);
    while (!seen && read_line(w.out, line, sizeof line, T_WAIT) > 0)
      seen = strncmp(line, want, strlen(want)) == 0 &&
             strstr(line, "held directly") != NULL;
    zkt_check(seen, "--watch through the agent did not show %s", name);
    CU_ASSERT(kill(w.pid, SIGTERM) == 0);
    CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
    err[0] = '\0';
    read_all(w.err, err, OUT, 1000);
    zkt_check(strstr(err, "lists through the agent") != NULL &&
                  !strstr(err, "session of its own"),
              "--watch through the agent did not say it lists through "
              "it:\n%s",
              err);
    cleanup(&w);
  }

  /* A socket path too long for sun_path is a usage error that says so. */
  {
    char longpath[200];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", longpath,
                                                       "x", "--", "true",
                                                       NULL},
                                 out_a, OUT, err, OUT),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "holds at most 107"));
  }

  /* -v through the agent traces what the library tells (the event hook):
   * the queueing only the agent sees, the grant and the release. */
  {
    char vname[64];
    zkt_name(vname, sizeof vname, "cli-agent-v");
    CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                       "-v", vname, "--",
                                                       "true", NULL},
                                 out_a, OUT, err, OUT),
                    0);
    zkt_check(strstr(err, "granted ") && strstr(err, "released ") &&
                  strstr(err, "the agent's session uses the servers ") &&
                  !strstr(err, "servers changed"),
              "-v through the agent traced no grant and release:\n%s", err);
    assert_no_node(vname);
  }

  /* The waiting line through the agent (stderr not a terminal: one line,
   * with -v), drawn at the agent's news of the waiter's place, as
   * direct. */
  {
    proc w;
    char line[1024], want[256], parent[ZKL_PATH_MAX];
    bool seen = false;
    zkt_parent(parent, sizeof parent, name);
    snprintf(want, sizeof want,
             "zklock: waiting for /locks/%s: 1 ahead, held by ", name);
    spawn(&w, "--agent", ag.sock, "-v", "-w", "30", name, "--", "true", NULL);
    while (!seen && read_line(w.err, line, sizeof line, T_WAIT) > 0)
      seen = strncmp(line, want, strlen(want)) == 0;
    zkt_check(seen, "no waiting line through the agent (wanted: %s...)",
              want);
    CU_ASSERT(zkt_wait_children(parent, 2, T_WAIT) == 2);
    /* the holder lets go: the waiter runs its command and exits 0 */
    CU_ASSERT_EQUAL(zkl_lock_release(held), ZKL_OK);
    CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
    cleanup(&w);
    CU_ASSERT_EQUAL(zkl_lock_acquire(held, -1, NULL), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_get_node_path(held, path, sizeof path), ZKL_OK);
  }

  /* --leader: the same line. */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&cand, d, ename, "cli-one"),
                        ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(cand, -1, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--leader", ename, NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--leader", ename, NULL},
                               out_d, OUT, err, OUT),
                  0);
  CU_ASSERT_STRING_EQUAL(out_a, out_d);
  CU_ASSERT(strncmp(out_a, "cli-one\t", 8) == 0);
  zkl_lock_free(cand);

  /* --revoke: the holder asked, its node printed. */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--revoke", name, NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_PTR_NOT_NULL(strstr(out_a, path));
  CU_ASSERT_EQUAL(zkt_counter_wait(&revoked, 1, T_WAIT), 1);

  /* --break: the holder loses its lock, broken. */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"--agent", ag.sock,
                                                     "--break", name,
                                                     "--grace", "0", NULL},
                               out_a, OUT, err, OUT),
                  0);
  CU_ASSERT_EQUAL(zkt_rec_wait(&lost, 1, T_WAIT), ZKL_LOST_BROKEN);
  zkl_lock_free(held);
  CU_ASSERT_EQUAL(zkl_session_close(d, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  assert_no_node(name);
  assert_no_node(ename);
}


/* --format prometheus through the agent: the servers label names the
 * agent's ensemble (zkl_session_get_servers), not the -s given beside
 * --agent, which the agent's session does not use. */
static void test_prometheus_servers(void) {
  agentctl ag;
  static char out[OUT], err[OUT];
  char want[512];
  int rc;
  CU_ASSERT_FATAL(agentctl_start(&ag, zkt_hosts(), NULL));
  rc = run_question((const char *const[]){"-s", "192.0.2.1:2181", "--agent",
                                          ag.sock, "--list", "/", "--format",
                                          "prometheus", NULL},
                    out, OUT, err, OUT);
  zkt_check(rc == 0, "exit %d: %s", rc, err);
  snprintf(want, sizeof want, "zklock_up{list=\"/\",servers=\"%s\"} 1\n",
           zkt_hosts());
  zkt_check(strstr(out, want) != NULL, "want %s in:\n%s", want, out);
  CU_ASSERT(strstr(out, "192.0.2.1") == NULL);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
}

static const zkt_test tests[] = {
    {"--list, --leader, --revoke, --break through the agent",
     test_questions},
    {"--format prometheus through the agent: servers is the agent's",
     test_prometheus_servers},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_agent", tests);
}
