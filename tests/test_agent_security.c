/* SPDX-License-Identifier: Apache-2.0 */
/* test_agent_security.c - the security model of zklockd (docs/agent.md,
 * "Who may do what"), against a real ZooKeeper, real agents and the real
 * zklock run as a second real user (uid 65534, dropped to before exec):
 *
 * - the views obey the agent's policy: a user refused "list" of a prefix
 *   sees nothing of its holders through `--list PREFIX/ --watch`,
 *   `--list NAME --watch` or `--leader NAME --watch` (they used to open a
 *   direct session at the servers HELLO gave, and showed everything), a
 *   view running when a reload takes "list" away ends, and an allowed user
 *   sees the holders and their changes;
 * - the deployment where the policy protects: the agent shows digest
 *   credentials read from a file only it can read, and every node it makes
 *   is private to them whatever its client asked; an anonymous direct
 *   session can neither list the contenders, nor read the holder, nor
 *   queue (ZNOAUTH), while an allowed user lists through the agent; the
 *   credentials are shown again on the session the agent opens after an
 *   expiry.
 *
 * Needs root (to be the second user); skipped (77) without. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentctl.h"
#include "clitest.h"

#define OUT 16384
#define NOBODY 65534
#define ZKLOCKD ZKL_TEST_BUILDDIR "/agent/zklockd"

static void write_file(const char *path, const char *text, mode_t mode) {
  FILE *f;
  unlink(path);
  f = fopen(path, "w");
  CU_ASSERT_FATAL(f != NULL);
  fputs(text, f);
  CU_ASSERT_FATAL(fclose(f) == 0);
  CU_ASSERT_FATAL(chmod(path, mode) == 0);
}

/* An agent whose socket the second user can reach (agentctl makes its
 * directory 0700). */
static bool start_agent(agentctl *ag, const char *const *extra) {
  if (!agentctl_start(ag, zkt_hosts(), extra))
    return false;
  return zkt_check(chmod(ag->dir, 0711) == 0, "chmod %s: %s", ag->dir,
                   strerror(errno));
}

static zkl_session *open_agent(const agentctl *a) {
  zkl_session_options o;
  zkl_session *s = NULL;
  int rc;
  zkl_session_options_init(&o);
  o.agent = a->sock;
  rc = zkl_session_open(&s, &o);
  zkt_check(rc == ZKL_OK, "open through the agent: %s", zkl_strerror(rc));
  return rc == ZKL_OK ? s : NULL;
}

/* A hold through s on name, with info; its node's path into node. */
static zkl_lock *hold(zkl_session *s, const char *name, const char *info,
                      char *node, size_t len) {
  zkl_lock *l;
  CU_ASSERT_FATAL(zkl_lock_new(&l, s, name) == ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_owner_info(l, info), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, len), ZKL_OK);
  return l;
}

static const spawn_opts *as_nobody(void) {
  static spawn_opts so;
  memset(&so, 0, sizeof so);
  so.tty = -1;
  so.uid = NOBODY;
  return &so;
}

/* zklock args as the second user, to its end (bounded): its status (-1:
 * still running at the bound, then killed), stdout and stderr. */
static int run_as_nobody(const char *const *args, char *out, char *err) {
  proc p;
  int rc;
  spawn_argv(&p, as_nobody(), args);
  rc = wait_exit(&p, T_WAIT);
  if (rc < 0)
    kill(p.pid, SIGKILL);
  out[0] = err[0] = '\0';
  read_all(p.out, out, OUT, 2000);
  read_all(p.err, err, OUT, 2000);
  cleanup(&p);
  return rc;
}

/* Reads p's stdout until a line that has every one of want (NULL-ended):
 * true when one came within T_WAIT. */
static bool line_with(proc *p, const char *const *want) {
  char line[2048];
  static char err[OUT];
  while (read_line(p->out, line, sizeof line, T_WAIT) > 0) {
    int i;
    for (i = 0; want[i] && strstr(line, want[i]); i++)
      ;
    if (!want[i])
      return true;
    printf("\n    (a line without %s: %s)", want[i], line);
  }
  err[0] = '\0';
  read_all(p->err, err, sizeof err, 1000);
  printf("\n    zklock said:\n%s", err);
  return false;
}

/* What a refused user must not see anywhere: the holder's info, its node,
 * the candidate's id. */
static void assert_nothing_of(const char *what, const char *out,
                              const char *err, const char *const *secrets) {
  int i;
  for (i = 0; secrets[i]; i++)
    zkt_check(!strstr(out, secrets[i]) && !strstr(err, secrets[i]),
              "%s showed %s:\n%s\n%s", what, secrets[i], out, err);
}

/* ------------------------------------------------ the views and the policy */

static void test_views_policy(void) {
  agentctl ag;
  zkl_session *s;
  zkl_lock *sl, *pl, *sc, *pc, *ql;
  char sec[64], pub[64], sname[96], pname[96], svote[96], pvote[96];
  char sprefix[80], pprefix[80], snode[ZKL_PATH_MAX], pnode[ZKL_PATH_MAX];
  char qnode[ZKL_PATH_MAX];
  char conf[256], policy[512], ptoken[32];
  static char out[OUT], err[OUT];
  const char *extra[] = {"--config", conf, NULL};
  const char *secrets[] = {"secret holder", "secret-candidate", NULL, NULL};
  int i, rc;
  zkt_name(sec, sizeof sec, "sec");
  zkt_name(pub, sizeof pub, "pub");
  snprintf(sname, sizeof sname, "%s/db", sec);
  snprintf(pname, sizeof pname, "%s/db", pub);
  snprintf(svote, sizeof svote, "%s/vote", sec);
  snprintf(pvote, sizeof pvote, "%s/vote", pub);
  snprintf(sprefix, sizeof sprefix, "%s/", sec);
  snprintf(pprefix, sizeof pprefix, "%s/", pub);
  snprintf(conf, sizeof conf, "/tmp/zklockd-security-%ld.conf",
           (long)getpid());
  /* root may list both; the second user only the public names */
  snprintf(policy, sizeof policy,
           "lock * *\nlist %s uid:0\nlist %s *\n", sprefix, pprefix);
  write_file(conf, policy, 0644);
  CU_ASSERT_FATAL(start_agent(&ag, extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  sl = hold(s, sname, "secret holder", snode, sizeof snode);
  pl = hold(s, pname, "public holder", pnode, sizeof pnode);
  /* the prefix itself is a lock too, which "list PUB/" does not cover */
  ql = hold(s, pub, "prefix holder", qnode, sizeof qnode);
  secrets[2] = strrchr(snode, '/') + 1; /* the node's name: its uuid */
  CU_ASSERT_FATAL(zkl_lock_new_election(&sc, s, svote, "secret-candidate") ==
                  ZKL_OK);
  CU_ASSERT_FATAL(zkl_lock_new_election(&pc, s, pvote, "public-candidate") ==
                  ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(sc, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire(pc, ZKT_WAIT, NULL), ZKL_OK);

  /* Refused: each view ends as --list does (exit 3, the agent's refusal
   * said), having shown nothing of the holders. They used to watch from a
   * session of their own and show all of it. */
  {
    const char *const views[][8] = {
        {"--agent", ag.sock, "-H", "--list", sprefix, "--watch", NULL},
        {"--agent", ag.sock, "-H", "--list", sname, "--watch", NULL},
        {"--agent", ag.sock, "--leader", svote, "--watch", NULL},
        {"--agent", ag.sock, "-H", "--list", sprefix, NULL}};
    const char *const what[] = {"--list PREFIX/ --watch",
                                "--list NAME --watch", "--leader --watch",
                                "--list PREFIX/"};
    for (i = 0; i < 4; i++) {
      rc = run_as_nobody(views[i], out, err);
      zkt_check(rc == 3, "%s as uid %d: exit %d, not 3 (refused):\n%s\n%s",
                what[i], NOBODY, rc, out, err);
      zkt_check(strstr(err, zkl_strerror(ZKL_EDENIED)) != NULL,
                "%s: no refusal said:\n%s", what[i], err);
      assert_nothing_of(what[i], out, err, secrets);
    }
  }

  /* Allowed: "list PUB/" lets the second user list what is under PUB, as
   * `--list PUB/` asks it (a find under "PUB"), all of it but the lock
   * PUB itself, which the rule does not cover. (The agent refused the
   * whole find when its rule ended in '/'.) */
  {
    const char *prefix_secrets[] = {"prefix holder", strrchr(qnode, '/') + 1,
                                    NULL};
    rc = run_as_nobody((const char *const[]){"--agent", ag.sock, "-H",
                                             "--list", pprefix, NULL},
                       out, err);
    zkt_check(rc == 0 && strstr(out, "public holder"),
              "--list %s as uid %d, allowed: exit %d:\n%s\n%s", pprefix,
              NOBODY, rc, out, err);
    assert_nothing_of("--list PUB/", out, err, prefix_secrets);
  }

  /* Allowed: the second user's view shows the public holder, then its
   * change (the holder gone) at the next listing. */
  {
    proc w;
    char want[128];
    spawn_with(&w, as_nobody(), "--agent", ag.sock, "-H", "--list", pprefix,
               "--watch", NULL);
    snprintf(want, sizeof want, "%s\tmutex\t", pname);
    zkt_check(line_with(&w, (const char *const[]){want, "public holder",
                                                  NULL}),
              "the allowed view did not show %s", pname);
    CU_ASSERT_EQUAL(zkl_lock_release(pl), ZKL_OK);
    /* A drawing (tables are apart by a blank line) with the election and
     * without the mutex: the release seen. That drawing is the last until
     * the next change, so once its election line came with no mutex line
     * before it (the mutex's sorts first: the same contention, then by
     * name), the view is ended and the drawing read to its end. */
    {
      char line[2048];
      bool vote = false, db = false, seen = false;
      int n;
      snprintf(want, sizeof want, "%s\telection\t", pvote);
      while ((n = read_line(w.out, line, sizeof line, T_WAIT)) >= 0) {
        if (n == 0 || line[0] == '\0') { /* the end, or a new drawing */
          if ((seen = vote && !db) || n == 0)
            break;
          vote = db = false;
        } else if (strncmp(line, want, strlen(want)) == 0) {
          if (!vote && !db)
            kill(w.pid, SIGTERM);
          vote = true;
        } else if (strncmp(line, pname, strlen(pname)) == 0 &&
                   line[strlen(pname)] == '\t') {
          db = true;
        }
        zkt_check(!strstr(line, "prefix holder"),
                  "the view showed the lock %s: %s", pub, line);
      }
      zkt_check(seen, "the view did not draw the release of %s", pname);
    }
    wait_exit(&w, T_WAIT);
    cleanup(&w);
  }
  {
    proc w;
    int64_t token = 0;
    CU_ASSERT_EQUAL(zkl_name_get_leader(s, pvote, NULL, 0, &token), ZKL_OK);
    snprintf(ptoken, sizeof ptoken, "public-candidate\t%lld",
             (long long)token);
    spawn_with(&w, as_nobody(), "--agent", ag.sock, "--leader", pvote,
               "--watch", NULL);
    zkt_check(line_with(&w, (const char *const[]){ptoken, NULL}),
              "the allowed leader view did not show %s", ptoken);
    CU_ASSERT(kill(w.pid, SIGTERM) == 0);
    CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
    cleanup(&w);
  }
  /* root may list the secret names: its view shows the holder */
  {
    proc w;
    char want[128];
    snprintf(want, sizeof want, "%s\tmutex\t", sname);
    spawn(&w, "--agent", ag.sock, "-H", "--list", sprefix, "--watch", NULL);
    zkt_check(line_with(&w, (const char *const[]){want, "secret holder",
                                                  NULL}),
              "root's view did not show %s", sname);
    CU_ASSERT(kill(w.pid, SIGTERM) == 0);
    CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
    cleanup(&w);
  }

  /* A reload that takes "list" away: the running view ends at its next
   * listing, and shows nothing the holder did after. */
  {
    proc w;
    char want[128];
    zkl_participant *list = NULL;
    int count = 0;
    const char *after[] = {"after the reload", NULL};
    CU_ASSERT_EQUAL(zkl_lock_acquire(pl, ZKT_WAIT, NULL), ZKL_OK);
    spawn_with(&w, as_nobody(), "--agent", ag.sock, "-H", "--list", pprefix,
               "--watch", NULL);
    snprintf(want, sizeof want, "%s\tmutex\t", pname);
    zkt_check(line_with(&w, (const char *const[]){want, NULL}),
              "the allowed view did not show %s", pname);
    snprintf(policy, sizeof policy, "lock * *\nlist %s-none/ uid:0\n", pub);
    write_file(conf, policy, 0644);
    agentctl_signal(&ag, SIGHUP);
    /* the reload took: root is refused now too (bounded: one answer per
     * question, each a round trip to the agent) */
    {
      int64_t until = zkt_now_ms() + T_WAIT;
      while ((rc = zkl_name_list(s, pname, &list, &count)) == ZKL_OK &&
             zkt_now_ms() < until)
        zkl_name_list_free(list);
      CU_ASSERT_EQUAL(rc, ZKL_EDENIED);
    }
    CU_ASSERT_EQUAL(zkl_lock_release(pl), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_set_owner_info(pl, "after the reload"), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(pl, ZKT_WAIT, NULL), ZKL_OK);
    rc = wait_exit(&w, T_WAIT);
    out[0] = err[0] = '\0';
    read_all(w.out, out, OUT, 2000);
    read_all(w.err, err, OUT, 2000);
    zkt_check(rc == 3, "the view ran on after the reload (exit %d):\n%s\n%s",
              rc, out, err);
    assert_nothing_of("the view after the reload", out, err, after);
    cleanup(&w);
  }

  zkl_lock_free(sl);
  zkl_lock_free(pl);
  zkl_lock_free(ql);
  zkl_lock_free(sc);
  zkl_lock_free(pc);
  CU_ASSERT_EQUAL(zkl_session_close(s, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  zkt_assert_no_contender(sname);
  zkt_assert_no_contender(pname);
  CU_ASSERT_EQUAL(zkt_wait_absent(qnode, ZKT_WAIT), 0); /* its queue holds
                                                           the others' */
}

/* ---------------------------------------------- the protected deployment */

/* zklockd with args, to its end (it must not start): its status and what
 * it said. */
static int zklockd_refuses(const char *const *args, char *err) {
  const char *argv[16];
  int pipefd[2], status, n = 0;
  pid_t pid;
  argv[n++] = ZKLOCKD;
  while (args[n - 1] && n < 15) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  CU_ASSERT_FATAL(pipe(pipefd) == 0);
  fflush(stdout);
  pid = fork();
  CU_ASSERT_FATAL(pid >= 0);
  if (pid == 0) {
    dup2(pipefd[1], 2);
    dup2(pipefd[1], 1);
    execv(ZKLOCKD, (char *const *)argv);
    _exit(127);
  }
  close(pipefd[1]);
  err[0] = '\0';
  read_all(pipefd[0], err, OUT, T_WAIT); /* until it exits (EOF) */
  close(pipefd[0]);
  CU_ASSERT(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A direct session with the agent's credentials. */
static zkl_session *as_agent(const char *credentials) {
  zkl_session *s = zkt_session(10000);
  CU_ASSERT_EQUAL(zkl_session_add_auth(s, "digest", credentials,
                                       (int)strlen(credentials)),
                  ZKL_OK);
  return s;
}

/* The ACL of path is the agent's identity's alone. */
static void assert_private(zkl_session *agent_id, const char *path) {
  struct ACL_vector acl;
  struct Stat st;
  int rc = zoo_get_acl(zkl_session_handle(agent_id), path, &acl, &st);
  CU_ASSERT_EQUAL_FATAL(rc, ZOK);
  zkt_check(acl.count == 1 && strcmp(acl.data[0].id.scheme, "digest") == 0 &&
                strncmp(acl.data[0].id.id, "zklockd-test:", 13) == 0,
            "the ACL of %s is not the agent's alone (%d entries, first "
            "%s:%s)",
            path, acl.count, acl.count ? acl.data[0].id.scheme : "-",
            acl.count ? acl.data[0].id.id : "-");
  deallocate_ACL_vector(&acl);
}

static void on_change(zhandle_t *zh, int type, int state, const char *path,
                      void *ctx) {
  (void)zh;
  (void)type;
  (void)state;
  (void)path;
  zkt_counter_add(ctx, 1);
}

/* Waits (bounded) until path is gone, seen by a session with the agent's
 * credentials: ZooKeeper answers an anonymous exists on a private node,
 * but never tells that session's watch of its deletion (zkt_wait_absent's
 * observer waited out its bound). 0 when gone. */
static int wait_gone(zkl_session *agent_id, const char *path, int timeout_ms) {
  int64_t until = zkt_now_ms() + timeout_ms;
  static zkt_counter fired; /* the client keeps the watch (a last one on
                               the gone node too) past this call */
  static bool made;
  struct Stat st;
  int rc;
  if (!made)
    zkt_counter_init(&fired);
  made = true;
  while ((rc = zoo_wexists(zkl_session_handle(agent_id), path, on_change,
                           &fired, &st)) == ZOK) {
    int seen = zkt_counter_get(&fired), left = (int)(until - zkt_now_ms());
    if (left <= 0 || zkt_counter_wait(&fired, seen + 1, left) <= seen)
      return -1;
  }
  return rc == ZNONODE ? 0 : -1;
}

static void test_protected_deployment(void) {
  agentctl ag;
  zkl_session *s, *anon, *agent_id;
  zkl_lock *l, *x;
  char vault[64], vname[96], vprefix[80], node[ZKL_PATH_MAX], queue[128];
  char conf[256], authf[256], creds[128], text[256], policy[256];
  static char out[OUT], err[OUT];
  const char *extra[] = {"--config", conf, "--auth-file", authf,
                         "--acl", "private", "-t", "3s", NULL};
  const char *secrets[] = {"vault holder", NULL, NULL};
  struct String_vector kids;
  struct Stat st;
  char data[512];
  int len = sizeof data, rc;
  zkt_name(vault, sizeof vault, "vault");
  snprintf(vname, sizeof vname, "%s/db", vault);
  snprintf(vprefix, sizeof vprefix, "%s/", vault);
  snprintf(queue, sizeof queue, "/locks/%s", vname);
  snprintf(conf, sizeof conf, "/tmp/zklockd-security-%ld.conf",
           (long)getpid());
  snprintf(authf, sizeof authf, "/tmp/zklockd-security-%ld.auth",
           (long)getpid());
  snprintf(creds, sizeof creds, "zklockd-test:pw-%ld", (long)getpid());
  snprintf(text, sizeof text, "# the agent's ZooKeeper identity\ndigest:%s\n",
           creds);
  snprintf(policy, sizeof policy, "lock * *\nlist %s *\n", vprefix);
  write_file(conf, policy, 0644);

  /* A file others may read, and --acl without credentials: refused, and
   * the agent does not start. */
  write_file(authf, text, 0644);
  rc = zklockd_refuses((const char *const[]){"-s", zkt_hosts(), "--socket",
                                             "/tmp/zklockd-never.sock",
                                             "--auth-file", authf, NULL},
                       err);
  zkt_check(rc == 1 && strstr(err, "mode 0644") && !strstr(err, "pw-"),
            "a world-readable --auth-file: exit %d:\n%s", rc, err);
  rc = zklockd_refuses((const char *const[]){"-s", zkt_hosts(), "--socket",
                                             "/tmp/zklockd-never.sock",
                                             "--acl", "private", NULL},
                       err);
  zkt_check(rc == 1 && strstr(err, "--auth-file"),
            "--acl private without credentials: exit %d:\n%s", rc, err);

  write_file(authf, text, 0600);
  CU_ASSERT_FATAL(start_agent(&ag, extra));
  s = open_agent(&ag);
  CU_ASSERT_FATAL(s != NULL);
  /* the client asks for an open ACL: the agent's --acl private wins */
  CU_ASSERT_FATAL(zkl_lock_new(&l, s, vname) == ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_acl(l, ZKL_ACL_OPEN), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_set_owner_info(l, "vault holder"), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l, ZKT_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
  secrets[1] = strrchr(node, '/') + 1;
  agent_id = as_agent(creds);
  assert_private(agent_id, node);
  assert_private(agent_id, queue);

  /* An anonymous direct session: no listing, no reading, no queueing. */
  anon = zkt_session(10000);
  rc = zoo_get_children(zkl_session_handle(anon), queue, 0, &kids);
  zkt_check(rc == ZNOAUTH, "anonymous getChildren of %s: %s", queue,
            zerror(rc));
  if (rc == ZOK)
    deallocate_String_vector(&kids);
  rc = zoo_get(zkl_session_handle(anon), node, 0, data, &len, &st);
  zkt_check(rc == ZNOAUTH, "anonymous getData of %s: %s", node, zerror(rc));
  {
    zkl_participant *list = NULL;
    int count = 0;
    rc = zkl_name_list(anon, vname, &list, &count);
    zkt_check(rc == ZNOAUTH, "anonymous zkl_name_list: %s",
              zkl_strerror(rc));
    if (rc == ZKL_OK)
      zkl_name_list_free(list);
  }
  CU_ASSERT_FATAL(zkl_lock_new(&x, anon, vname) == ZKL_OK);
  rc = zkl_lock_acquire(x, 0, NULL);
  zkt_check(rc == ZNOAUTH, "an anonymous acquire of %s: %s", vname,
            zkl_strerror(rc));
  zkl_lock_free(x);
  /* zklock -s without credentials, as any local user could run it */
  rc = run_as_nobody((const char *const[]){"-s", zkt_hosts(), "--list", vname,
                                           NULL},
                     out, err);
  zkt_check(rc == 3, "zklock -s --list of a private lock: exit %d:\n%s\n%s",
            rc, out, err);
  assert_nothing_of("zklock -s --list", out, err, secrets);

  /* Through the agent, a user its policy lets list sees the holder. */
  rc = run_as_nobody((const char *const[]){"--agent", ag.sock, "--list",
                                           vname, NULL},
                     out, err);
  zkt_check(rc == 0 && strstr(out, "vault holder") && strstr(out, secrets[1]),
            "--list through the agent: exit %d:\n%s\n%s", rc, out, err);
  {
    proc w;
    char want[128];
    snprintf(want, sizeof want, "%s\tmutex\t", vname);
    spawn_with(&w, as_nobody(), "--agent", ag.sock, "-H", "--list", vprefix,
               "--watch", NULL);
    zkt_check(line_with(&w, (const char *const[]){want, "vault holder",
                                                  NULL}),
              "the view through the agent did not show %s", vname);
    CU_ASSERT(kill(w.pid, SIGTERM) == 0);
    CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
    cleanup(&w);
  }

  /* The agent's session expires (frozen past its timeout): the session it
   * opens next shows the credentials again, or no private node could be
   * made (ZINVALIDACL). */
  agentctl_freeze(&ag, true);
  CU_ASSERT_EQUAL(wait_gone(agent_id, node, 4 * ZKT_WAIT), 0);
  agentctl_freeze(&ag, false);
  zkl_lock_free(l);
  zkl_session_close(s, NULL);
  /* Thawed, the agent hears that its session expired, tells its clients
   * and opens a new one; a client that connects meanwhile waits in its
   * HELLO, 10 s at most. In a CI run under valgrind, with another test on
   * the other core, an open right after the thaw failed with ZKL_EAGENT
   * (not reproduced here, 5 runs with and without that load; a slow new
   * session is the one way we found): the opens now wait for the agent to
   * say its new session is open, and a failing one prints its log. */
  zkt_check(agentctl_log_has(&ag, "a new one is open", NULL, 4 * ZKT_WAIT),
            "the agent did not open a new session after its expiry");
  {
    int64_t until = zkt_now_ms() + 2 * ZKT_WAIT;
    char vname2[128];
    snprintf(vname2, sizeof vname2, "%s/after", vault);
    rc = -1;
    /* The first clients may still meet the old session (told it expired,
     * or cut off as the agent reopens): each try is a round trip to the
     * agent, not a sleep. */
    while (rc != ZKL_OK && zkt_now_ms() < until) {
      int64_t t0 = zkt_now_ms();
      if (!(s = open_agent(&ag))) {
        printf("    (the open took %lld ms; the agent's log follows)\n",
               (long long)(zkt_now_ms() - t0));
        agentctl_print_log(&ag);
        break;
      }
      CU_ASSERT_FATAL(zkl_lock_new(&l, s, vname2) == ZKL_OK);
      rc = zkl_lock_acquire(l, ZKT_WAIT, NULL);
      if (rc == ZKL_OK)
        break;
      zkt_check(rc == ZKL_EEXPIRED || rc == ZKL_EAGENT || rc == ZKL_ECLOSED,
                "an acquire after the agent's expiry: %s", zkl_strerror(rc));
      if (rc != ZKL_EEXPIRED && rc != ZKL_EAGENT && rc != ZKL_ECLOSED)
        break;
      zkl_lock_free(l);
      zkl_session_close(s, NULL);
      s = NULL;
    }
    zkt_check(rc == ZKL_OK, "no lock through the agent after its expiry: %s",
              zkl_strerror(rc));
    if (rc == ZKL_OK) {
      CU_ASSERT_EQUAL(zkl_lock_get_node_path(l, node, sizeof node), ZKL_OK);
      assert_private(agent_id, node);
      CU_ASSERT_EQUAL(zkl_lock_release(l), ZKL_OK);
    }
    if (s) {
      zkl_lock_free(l);
      zkl_session_close(s, NULL);
    }
  }
  zkl_session_close(anon, NULL);
  zkl_session_close(agent_id, NULL);
  CU_ASSERT_EQUAL(agentctl_stop(&ag), 0);
  unlink(conf);
  unlink(authf);
}

static const zkt_test tests[] = {
    {"the views through the agent obey its list rule",
     test_views_policy},
    {"the agent's credentials and private ACL keep direct readers out",
     test_protected_deployment},
    {NULL, NULL}};

int main(int argc, char **argv) {
  if (geteuid() != 0) {
    printf("test_agent_security: needs root, to run zklock as a second "
           "user: skipped\n");
    return 77;
  }
  return clit_main(argc, argv, "agent_security", tests);
}
