/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_view.c - every lock under a prefix at a glance: `zklock --list
 * PREFIX/` as a table, --format json and --format prometheus, and --watch
 * in a real terminal (tmux, on a socket of its own: keys sent, the pane
 * captured), run against a real ZooKeeper. The locks are held by the test
 * itself through the library: a mutex with two waiters, a read/write lock
 * with two readers, a semaphore of two with a waiter, an election of two
 * under a deeper name. Every wait is bounded and waits on a condition (a
 * child watch, the pane's text); nothing is left behind. */
#define _GNU_SOURCE 1
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clitest.h"

/* ---------------------------------------------------------------- helpers */

/* The locks of a test, held by the test's own session. */
typedef struct {
  char base[64], mutex[128], rw[128], sem[128], elect[128];
  zkl_session *s;
  zkl_lock *m[3], *sem_l[3], *el[2];
  zkl_rwlock *rwl[2];
  zkt_rec got[3]; /* the second and third mutex contenders, the third
                     semaphore contender */
  zkt_rec el_got;
} scene;

static void wait_children(const char *path, int want) {
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(path, want, T_WAIT), want);
}

static void scene_set(scene *sc) {
  char path[256];
  int i;
  memset(sc, 0, sizeof *sc);
  zkt_name(sc->base, sizeof sc->base, "view");
  snprintf(sc->mutex, sizeof sc->mutex, "%s/mutex", sc->base);
  snprintf(sc->rw, sizeof sc->rw, "%s/rw", sc->base);
  snprintf(sc->sem, sizeof sc->sem, "%s/sem", sc->base);
  snprintf(sc->elect, sizeof sc->elect, "%s/deep/elect", sc->base);
  sc->s = zkt_session(10000);
  for (i = 0; i < 3; i++)
    zkt_rec_init(&sc->got[i]);
  zkt_rec_init(&sc->el_got);
  /* the mutex: held, two waiting */
  for (i = 0; i < 3; i++)
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&sc->m[i], sc->s, sc->mutex), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_set_owner_info(sc->m[0], "first \"one\""),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(sc->m[0], T_WAIT, NULL), ZKL_OK);
  for (i = 1; i < 3; i++)
    CU_ASSERT_EQUAL(
        zkl_lock_acquire_async(sc->m[i], -1, zkt_on_acquired, &sc->got[i - 1]),
        ZKL_OK);
  zkt_parent(path, sizeof path, sc->mutex);
  wait_children(path, 3);
  /* two readers */
  for (i = 0; i < 2; i++) {
    CU_ASSERT_EQUAL_FATAL(zkl_rwlock_new(&sc->rwl[i], sc->s, sc->rw), ZKL_OK);
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_acquire(zkl_rwlock_read(sc->rwl[i]), T_WAIT, NULL), ZKL_OK);
  }
  /* the election, its second candidate waiting (before the semaphore's
   * waiter: it has waited longer) */
  for (i = 0; i < 2; i++)
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&sc->el[i], sc->s, sc->elect,
                                                i ? "beta" : "alpha"),
                          ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(sc->el[0], T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(
      zkl_lock_acquire_async(sc->el[1], -1, zkt_on_acquired, &sc->el_got),
      ZKL_OK);
  zkt_parent(path, sizeof path, sc->elect);
  wait_children(path, 2);
  /* a semaphore of two: two hold, one waits */
  for (i = 0; i < 3; i++)
    CU_ASSERT_EQUAL_FATAL(
        zkl_lock_new_semaphore(&sc->sem_l[i], sc->s, sc->sem, 2), ZKL_OK);
  for (i = 0; i < 2; i++)
    CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(sc->sem_l[i], T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(
      zkl_lock_acquire_async(sc->sem_l[2], -1, zkt_on_acquired, &sc->got[2]),
      ZKL_OK);
  snprintf(path, sizeof path, "/locks/%s/leases", sc->sem);
  wait_children(path, 3);
}

static void scene_end(scene *sc) {
  int i;
  for (i = 0; i < 3; i++) {
    zkl_lock_free(sc->m[i]);
    zkl_lock_free(sc->sem_l[i]);
  }
  for (i = 0; i < 2; i++) {
    zkl_rwlock_free(sc->rwl[i]);
    zkl_lock_free(sc->el[i]);
  }
  zkl_session_close(sc->s, NULL);
  zkt_assert_no_contender(sc->mutex);
  zkt_assert_no_contender(sc->rw);
  zkt_assert_no_contender(sc->sem);
  zkt_assert_no_contender(sc->elect);
}

/* ------------------------------------------------------------------ tests */

/* --list PREFIX/: every lock under it, of every kind, with its holders and
 * waiters, the most contended first; -H drops the header; a single name
 * still lists its contenders as before. */
static void test_table(void) {
  char prefix[80], out[8192], err[1024], *line, *next, *f[9];
  const char *want[4][4];
  scene sc;
  int n = 0, i;
  scene_set(&sc);
  snprintf(prefix, sizeof prefix, "%s/", sc.base);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", prefix, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT_STRING_EQUAL(err, "");
  CU_ASSERT(strncmp(out,
                    "NAME\tKIND\tHOLDERS\tWAITERS\tHELD_S\tWAITED_S\tTOKEN"
                    "\tHOLDER\tINFO\n",
                    strlen("NAME\tKIND")) == 0);
  /* name, kind, holders, waiters: mutex 2 waiters, then the election and
   * the semaphore with one (the election's waited longer), then rw */
  want[0][0] = sc.mutex, want[0][1] = "mutex", want[0][2] = "1",
  want[0][3] = "2";
  want[1][0] = sc.elect, want[1][1] = "election", want[1][2] = "1",
  want[1][3] = "1";
  want[2][0] = sc.sem, want[2][1] = "semaphore", want[2][2] = "2",
  want[2][3] = "1";
  want[3][0] = sc.rw, want[3][1] = "rwlock", want[3][2] = "2", want[3][3] = "0";
  for (line = strchr(out, '\n') + 1; *line; line = next, n++) {
    next = line + strcspn(line, "\n");
    if (*next)
      *next++ = '\0';
    if (!zkt_check(n < 4, "an extra line: %s", line))
      break;
    CU_ASSERT_EQUAL(clitest_fields(line, f, 9), 9);
    for (i = 0; i < 4; i++)
      zkt_check(strcmp(f[i], want[n][i]) == 0, "line %d field %d: %s, not %s",
                n, i, f[i], want[n][i]);
    if (n == 0) { /* the holder: this process, its info */
      char who[300];
      snprintf(who, sizeof who, "%s:%ld", clit_hostname, (long)getpid());
      CU_ASSERT_STRING_EQUAL(f[7], who);
      CU_ASSERT_STRING_EQUAL(f[8], "first \"one\"");
      CU_ASSERT(atoll(f[6]) > 0);
    }
    if (n == 1)
      CU_ASSERT_STRING_EQUAL(f[7], "'alpha'");
    if (n == 3)
      CU_ASSERT_STRING_EQUAL(f[5], "-"); /* nobody waits */
  }
  CU_ASSERT_EQUAL(n, 4);
  /* -H: no header; the semaphore's prefix alone */
  snprintf(prefix, sizeof prefix, "%s/deep/", sc.base);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(), "-H",
                                                     "--list", prefix, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT(strncmp(out, sc.elect, strlen(sc.elect)) == 0);
  CU_ASSERT(strchr(out, '\n') == out + strlen(out) - 1);
  /* nothing there: only the header */
  snprintf(prefix, sizeof prefix, "%s/none/", sc.base);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", prefix, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT(strncmp(out, "NAME\t", 5) == 0 &&
            strchr(out, '\n') == out + strlen(out) - 1);
  /* the whole tree: ours among them */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(), "-H",
                                                     "--list", "/", NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT(strstr(out, sc.sem) != NULL && strstr(out, sc.elect) != NULL);
  scene_end(&sc);
}

/* --list NAME while only NAME/web is held (issue 34, item 6): the list
 * of NAME itself stays empty and the exit 0, and stderr says which form
 * lists what is under it; -q silences that; a full path the same; a name
 * with nothing under it says nothing. */
static void test_list_name_above_locks(void) {
  char base[64], held[128], full[128], fullheld[160], want[256];
  char out[4096], err[2048];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l[2];
  zkt_name(base, sizeof base, "above");
  snprintf(held, sizeof held, "%s/web", base);
  snprintf(full, sizeof full, "/%s-full", base);
  snprintf(fullheld, sizeof fullheld, "%s/web", full);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s, held), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[1], s, fullheld), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l[0], T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l[1], T_WAIT, NULL), ZKL_OK);
  /* the table: the header only, exit 0, and the hint */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", base, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT(strncmp(out, "POS\t", 4) == 0 &&
            strchr(out, '\n') == out + strlen(out) - 1);
  snprintf(want, sizeof want, "--list '%s/' lists them", base);
  zkt_check(strstr(err, want) != NULL, "stderr: %s", err);
  snprintf(want, sizeof want, "'%s'", held);
  zkt_check(strstr(err, want) != NULL, "stderr: %s", err);
  /* JSON: the document on stdout as before, the hint on stderr */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", base,
                                         "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  CU_ASSERT(strstr(out, "\"contenders\":[]") != NULL ||
            strstr(out, "\"contenders\": []") != NULL);
  snprintf(want, sizeof want, "--list '%s/' lists them", base);
  zkt_check(strstr(err, want) != NULL, "stderr: %s", err);
  /* -q: nothing said */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(), "-q",
                                                     "--list", base, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT_STRING_EQUAL(err, "");
  /* a full path: the same */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", full, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  snprintf(want, sizeof want, "--list '%s/' lists them", full);
  zkt_check(strstr(err, want) != NULL, "stderr: %s", err);
  /* the lock itself: held, listed, nothing said */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", held, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT(strstr(out, "\n0\t") != NULL);
  CU_ASSERT_STRING_EQUAL(err, "");
  /* nothing under it: nothing said */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--list", fullheld, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  CU_ASSERT_STRING_EQUAL(err, "");
  zkl_lock_free(l[0]);
  zkl_lock_free(l[1]);
  zkl_session_close(s, NULL);
  zkt_assert_no_contender(held);
  assert_empty(fullheld);
}

/* Runs python3 with the document on its stdin: its exit status. */
static int python_check(const char *doc, const char *script) {
  char file[] = "/tmp/zklock-view-XXXXXX", cmd[8192];
  int fd = mkstemp(file), rc;
  FILE *f;
  if (fd < 0 || !(f = fdopen(fd, "w")))
    return -1;
  fputs(doc, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "python3 -c '%s' < %s", script, file);
  rc = system(cmd);
  unlink(file);
  return rc;
}

/* --format json, version 1 (zklock(1), JSON): one document that parses,
 * with the counts; the strings escaped (the owner info has quotes); null,
 * not "" or 0, for what is unknown: a candidate's host, pid and info (its
 * node holds only its id), the oldest wait when nobody waits. */
static void test_json(void) {
  char prefix[80], out[16384], err[1024], script[4096];
  scene sc;
  scene_set(&sc);
  CU_ASSERT_EQUAL_FATAL(system("python3 -c 1 >/dev/null 2>&1"), 0);
  snprintf(prefix, sizeof prefix, "%s/", sc.base);
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", prefix,
                                         "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  CU_ASSERT_STRING_EQUAL(err, "");
  snprintf(
      script, sizeof script,
      "import json,sys\n"
      "d = json.load(sys.stdin)\n"
      "assert d[\"version\"] == 1, d\n"
      "assert d[\"prefix\"] == \"%s\", d\n"
      "L = d[\"locks\"]\n"
      "got = [(l[\"name\"], l[\"kind\"], len(l[\"holders\"]), l[\"waiters\"])"
      " for l in L]\n"
      "want = [(\"%s\", \"mutex\", 1, 2), (\"%s\", \"election\", 1, 1),"
      " (\"%s\", \"semaphore\", 2, 1), (\"%s\", \"rwlock\", 2, 0)]\n"
      "assert got == want, got\n"
      "h = L[0][\"holders\"][0]\n"
      "assert h[\"info\"] == \"first \\\"one\\\"\" and h[\"id\"] is None, h\n"
      "assert h[\"host\"] == \"%s\" and h[\"pid\"] == %ld, h\n"
      "assert h[\"token\"] == L[0][\"token\"] > 0, h\n"
      "assert h[\"node\"].startswith(\"/locks/%s/\"), h\n"
      "assert h[\"held_s\"] >= 0 and L[0][\"held_s\"] >= h[\"held_s\"]\n"
      "assert L[0][\"oldest_wait_s\"] >= 0\n"
      "c = L[1][\"holders\"][0]\n"
      "assert c[\"id\"] == \"alpha\", c\n"
      "assert c[\"host\"] is None and c[\"pid\"] is None, c\n"
      "assert c[\"info\"] is None, c\n"
      "assert L[3][\"oldest_wait_s\"] is None, L[3]\n"
      "assert isinstance(L[3][\"token\"], int), L[3]\n"
      "assert d[\"truncated\"] is False\n",
      sc.base, sc.mutex, sc.elect, sc.sem, sc.rw, clit_hostname,
      (long)getpid(), sc.mutex);
  CU_ASSERT_EQUAL(python_check(out, script), 0);
  scene_end(&sc);
}

/* --list NAME --format json: that lock's own document (it used to print
 * the overview of one lock): its kinds, and its contenders in queue order
 * with their node, token, session, owner, role and how long each has held
 * or waited; null for what is unknown or does not apply. */
static void test_json_one_lock(void) {
  char out[16384], err[1024], script[4096], sid[32];
  scene sc;
  scene_set(&sc);
  CU_ASSERT_EQUAL_FATAL(system("python3 -c 1 >/dev/null 2>&1"), 0);
  /* every contender is the test's own session */
  snprintf(sid, sizeof sid, "0x%llx",
           (unsigned long long)zoo_client_id(zkl_session_handle(sc.s))
               ->client_id);
  /* the mutex: one holder, two waiters */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list",
                                         sc.mutex, "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  CU_ASSERT_STRING_EQUAL(err, "");
  snprintf(
      script, sizeof script,
      "import json,sys\n"
      "d = json.load(sys.stdin)\n"
      "assert d[\"version\"] == 1 and d[\"name\"] == \"%s\", d\n"
      "assert d[\"kinds\"] == [\"mutex\"], d\n"
      "C = d[\"contenders\"]\n"
      "assert [c[\"role\"] for c in C] == [\"holder\", \"waiter\", "
      "\"waiter\"], C\n"
      "assert [c[\"position\"] for c in C] == [0, 1, 2], C\n"
      "assert C[0][\"token\"] < C[1][\"token\"] < C[2][\"token\"], C\n"
      "assert all(c[\"node\"].startswith(\"/locks/%s/\") for c in C), C\n"
      "assert all(c[\"kind\"] == \"lock\" for c in C), C\n"
      "assert all(c[\"session\"] == \"%s\" for c in C), C\n"
      "assert all(c[\"host\"] == \"%s\" and c[\"pid\"] == %ld for c in C)\n"
      "assert C[0][\"info\"] == \"first \\\"one\\\"\", C[0]\n"
      "assert C[1][\"info\"] is None and C[1][\"id\"] is None, C[1]\n"
      "assert C[0][\"held_s\"] >= 0 and C[0][\"waited_s\"] is None, C[0]\n"
      "assert C[1][\"held_s\"] is None and C[1][\"waited_s\"] >= 0, C[1]\n"
      "assert C[0][\"started\"] and C[0][\"queued\"], C[0]\n",
      sc.mutex, sc.mutex, sid, clit_hostname, (long)getpid());
  CU_ASSERT_EQUAL(python_check(out, script), 0);
  /* the election: its candidates' ids; no host, pid, info, started */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list",
                                         sc.elect, "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  snprintf(
      script, sizeof script,
      "import json,sys\n"
      "d = json.load(sys.stdin)\n"
      "assert d[\"kinds\"] == [\"election\"], d\n"
      "C = d[\"contenders\"]\n"
      "assert [(c[\"id\"], c[\"role\"], c[\"kind\"]) for c in C] == "
      "[(\"alpha\", \"holder\", \"latch\"), (\"beta\", \"waiter\", "
      "\"latch\")], C\n"
      "for c in C:\n"
      "  for k in (\"host\", \"pid\", \"info\", \"started\"):\n"
      "    assert c[k] is None, (k, c)\n"
      "  assert c[\"session\"] == \"%s\", c\n",
      sid);
  CU_ASSERT_EQUAL(python_check(out, script), 0);
  /* a name nobody contends for: no contender, no kind */
  snprintf(script, sizeof script, "%s/none", sc.base);
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", script,
                                         "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  CU_ASSERT_EQUAL(
      python_check(out, "import json,sys\n"
                        "d = json.load(sys.stdin)\n"
                        "assert d[\"kinds\"] == [] and d[\"contenders\"] == [],"
                        " d\n"),
      0);
  scene_end(&sc);
}

/* --format prometheus: every line a comment (# HELP / # TYPE) or a sample
 * of the text format 0.0.4, each family's samples after its HELP and TYPE,
 * and the values of the scene. */
static void test_prometheus(void) {
  char prefix[80], out[16384], err[1024], want[512], *line, *next;
  const char *family = NULL;
  regex_t help, type, sample;
  regmatch_t m[3];
  scene sc;
  int samples = 0;
  scene_set(&sc);
  CU_ASSERT_EQUAL_FATAL(regcomp(&help,
                                "^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n]+$",
                                REG_EXTENDED),
                        0);
  CU_ASSERT_EQUAL_FATAL(
      regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) gauge$", REG_EXTENDED),
      0);
  CU_ASSERT_EQUAL_FATAL(
      regcomp(&sample,
              "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{([a-zA-Z_][a-zA-Z0-9_]*=\""
              "([^\"\\\\\n]|\\\\[\\\\\"n])*\",?)*\\})? -?[0-9]+(\\.[0-9]+)?$",
              REG_EXTENDED),
      0);
  snprintf(prefix, sizeof prefix, "%s/", sc.base);
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", prefix,
                                         "--format", "prometheus", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  CU_ASSERT_STRING_EQUAL(err, "");
  CU_ASSERT(out[0] && out[strlen(out) - 1] == '\n');
  for (line = out; *line; line = next) {
    char name[64] = "";
    next = line + strcspn(line, "\n");
    if (*next)
      *next++ = '\0';
    if (regexec(&help, line, 2, m, 0) == 0) {
      snprintf(name, sizeof name, "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
               line + m[1].rm_so);
      family = line + m[1].rm_so; /* a TYPE line follows */
      continue;
    }
    if (regexec(&type, line, 2, m, 0) == 0) {
      zkt_check(family && strncmp(family, line + m[1].rm_so,
                                  (size_t)(m[1].rm_eo - m[1].rm_so)) == 0,
                "TYPE without its HELP: %s", line);
      continue;
    }
    if (!zkt_check(regexec(&sample, line, 3, m, 0) == 0, "not a sample: %s",
                   line))
      continue;
    zkt_check(family && strncmp(family, line, (size_t)m[1].rm_eo) == 0,
              "a sample outside its family: %s", line);
    samples++;
  }
  CU_ASSERT_EQUAL(samples, 5 * 4 + 3);
  /* the values; reread (the loop cut the lines) */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", prefix,
                                         "--format", "prometheus", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  snprintf(want, sizeof want,
           "\nzklock_holders{lock=\"%s\",kind=\"mutex\",list=\"%s\",servers=\"%s\"} 1\n", sc.mutex, prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "\nzklock_waiters{lock=\"%s\",kind=\"mutex\",list=\"%s\",servers=\"%s\"} 2\n", sc.mutex, prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "\nzklock_holders{lock=\"%s\",kind=\"semaphore\",list=\"%s\",servers=\"%s\"} 2\n", sc.sem, prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "\nzklock_waiters{lock=\"%s\",kind=\"rwlock\",list=\"%s\",servers=\"%s\"} 0\n", sc.rw, prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "\nzklock_longest_wait_seconds{lock=\"%s\",kind=\"rwlock\",list=\"%s\","
           "servers=\"%s\"} 0.000\n",
           sc.rw, prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want, "\nzklock_token{lock=\"%s\",kind=\"election\",",
           sc.elect);
  CU_ASSERT(strstr(out, want) != NULL &&
            atoll(strstr(strstr(out, want), "} ") + 2) > 0);
  snprintf(want, sizeof want,
           "\nzklock_list_truncated{list=\"%s\",servers=\"%s\"} 0\n", prefix,
           zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  /* the health series: reached, and when (Unix seconds, about now) */
  snprintf(want, sizeof want, "\nzklock_up{list=\"%s\",servers=\"%s\"} 1\n",
           prefix, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want,
           "\nzklock_last_success_timestamp_seconds{list=\"%s\",servers=\"%s\"} ",
           prefix, zkt_hosts());
  if (zkt_check(strstr(out, want) != NULL, "no timestamp:\n%s", out)) {
    double at = atof(strstr(out, want) + strlen(want));
    double now = (double)time(NULL);
    zkt_check(at > now - 60 && at < now + 60, "timestamp %.3f, now %.0f", at,
              now);
  }
  regfree(&help);
  regfree(&type);
  regfree(&sample);
  scene_end(&sc);
}


/* --format prometheus when ZooKeeper cannot be reached: the health series
 * alone, zklock_up 0, and exit status 3 (it used to print nothing, so a
 * textfile kept its last values); and a named lock that nobody holds has
 * its series, zero (it used to have none), with zklock_up 1. */
static void test_prometheus_up_and_idle(void) {
  char name[96], out[8192], err[1024], want[512];
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", "127.0.0.1:1", "--list",
                                         "nothere/", "--format",
                                         "prometheus", NULL},
                   out, sizeof out, err, sizeof err),
      3);
  zkt_check(strstr(out, "# TYPE zklock_up gauge\n"
                        "zklock_up{list=\"nothere/\",servers=\"127.0.0.1:1\"}"
                        " 0\n") != NULL,
            "unreachable:\n%s", out);
  CU_ASSERT(strstr(out, "zklock_holders") == NULL);
  CU_ASSERT(strstr(out, "zklock_last_success_timestamp_seconds") == NULL);
  CU_ASSERT(strncmp(err, "zklock: ", 8) == 0);
  /* a lock nobody holds, by its name */
  zkt_name(name, sizeof name, "view-idle");
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", name,
                                         "--format", "prometheus", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  snprintf(want, sizeof want,
           "\nzklock_holders{lock=\"%s\",kind=\"-\",list=\"%s\",servers=\"%s\"}"
           " 0\n",
           name, name, zkt_hosts());
  zkt_check(strstr(out, want) != NULL, "idle lock:\n%s", out);
  snprintf(want, sizeof want,
           "\nzklock_waiters{lock=\"%s\",kind=\"-\",list=\"%s\",servers=\"%s\"}"
           " 0\n",
           name, name, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
  snprintf(want, sizeof want, "\nzklock_up{list=\"%s\",servers=\"%s\"} 1\n",
           name, zkt_hosts());
  CU_ASSERT(strstr(out, want) != NULL);
}

/* ---------------------------------------------------------- node_exporter */

#define NODE_EXPORTER "prometheus-node-exporter"

/* A loopback port free now (the kernel's pick). 0 if none. */
static int free_port(void) {
  struct sockaddr_in a;
  socklen_t len = sizeof a;
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = 0;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

/* GET /metrics from 127.0.0.1:port: the whole answer in out; false when
 * nothing answers. */
static bool scrape(int port, char *out, size_t len) {
  struct sockaddr_in a;
  static const char req[] = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  size_t n = 0;
  ssize_t r;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0)
    return false;
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      write(fd, req, sizeof req - 1) != (ssize_t)(sizeof req - 1)) {
    close(fd);
    return false;
  }
  while (n + 1 < len && (r = read(fd, out + n, len - 1 - n)) > 0)
    n += (size_t)r;
  out[n] = '\0';
  close(fd);
  return n > 0;
}

/* Writes what zklock --format prometheus prints for args into file. */
static int write_textfile(const char *file, const char *const *args) {
  static char out[32768];
  char err[1024];
  FILE *f;
  int rc = run_question(args, out, sizeof out, err, sizeof err);
  if (rc != 0 || !(f = fopen(file, "w")))
    return rc ? rc : -1;
  fputs(out, f);
  return fclose(f);
}

/* Two textfiles, of two prefixes, read together by node_exporter's textfile
 * collector: the scrape has no error and both files' series (zklock's
 * series were alike in both files, zklock_list_truncated for one, and the
 * collector failed the whole scrape). With --label, the labels are there. */
static void test_node_exporter(void) {
  char dir[] = "/tmp/zklock-textfile-XXXXXX", file[2][128], arg[32],
      prefix[2][96], want[512];
  static char page[262144];
  scene sc;
  pid_t pid;
  int port, i;
  int64_t until;
  bool up = false;
  if (system(NODE_EXPORTER " --version >/dev/null 2>&1") != 0) {
    CU_FAIL("no " NODE_EXPORTER " (scripts/deps installs it)");
    return;
  }
  scene_set(&sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
  snprintf(prefix[0], sizeof prefix[0], "%s/deep/", sc.base);
  snprintf(prefix[1], sizeof prefix[1], "%s/", sc.base);
  for (i = 0; i < 2; i++) {
    snprintf(file[i], sizeof file[i], "%s/zklock%d.prom", dir, i);
    CU_ASSERT_EQUAL(
        write_textfile(file[i],
                       (const char *const[]){"-s", zkt_hosts(), "--list",
                                             prefix[i], "--format",
                                             "prometheus", "--label",
                                             i ? "team=b" : "team=a", NULL}),
        0);
  }
  port = free_port();
  CU_ASSERT_FATAL(port > 0);
  snprintf(arg, sizeof arg, "127.0.0.1:%d", port);
  pid = fork();
  if (pid == 0) {
    char d[160], w[64];
    int null = open("/dev/null", O_WRONLY), log;
    snprintf(d, sizeof d, "%s/node_exporter.log", dir); /* not a .prom */
    log = open(d, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    snprintf(d, sizeof d, "--collector.textfile.directory=%s", dir);
    snprintf(w, sizeof w, "--web.listen-address=%s", arg);
    dup2(null, 1);
    dup2(log, 2);
    execlp(NODE_EXPORTER, NODE_EXPORTER, "--collector.disable-defaults",
           "--collector.textfile", d, w, (char *)NULL);
    _exit(127);
  }
  CU_ASSERT(pid > 0);
  /* up when it answers (bounded) */
  until = zkt_now_ms() + T_WAIT;
  while (pid > 0 && !(up = scrape(port, page, sizeof page)) &&
         zkt_now_ms() < until) {
    struct timespec tick = {0, 20 * 1000000};
    nanosleep(&tick, NULL);
  }
  if (pid > 0) { /* stopped here, whatever came of it */
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
  }
  CU_ASSERT(up);
  /* a series in two files: node_exporter drops it and says so in its log
   * ("collected metric ... was collected before with the same name and
   * label values"), a failed gathering that the scrape shows only there */
  snprintf(want, sizeof want, "%s/node_exporter.log", dir);
  {
    static char log[65536];
    FILE *lf = fopen(want, "r");
    size_t n = lf ? fread(log, 1, sizeof log - 1, lf) : 0;
    log[n] = '\0';
    if (lf)
      fclose(lf);
    zkt_check(strstr(log, "was collected before") == NULL,
              "node_exporter found a series twice:\n%.2000s", log);
    unlink(want);
  }
  if (up) {
    zkt_check(strstr(page, "\nnode_textfile_scrape_error 0\n") != NULL,
              "node_exporter failed the scrape:\n%.4000s", page);
    CU_ASSERT(strstr(page, "\nnode_textfile_scrape_error 1\n") == NULL);
    /* each file's series: the election (in both), the mutex (in one) */
    for (i = 0; i < 2; i++) {
      snprintf(want, sizeof want,
               "\nzklock_holders{kind=\"election\",list=\"%s\",lock=\"%s\","
               "servers=\"%s\",team=\"%s\"} 1\n",
               prefix[i], sc.elect, zkt_hosts(), i ? "b" : "a");
      zkt_check(strstr(page, want) != NULL, "no %s in the scrape", want);
      snprintf(want, sizeof want,
               "\nzklock_list_truncated{list=\"%s\",servers=\"%s\",team="
               "\"%s\"} 0\n",
               prefix[i], zkt_hosts(), i ? "b" : "a");
      zkt_check(strstr(page, want) != NULL, "no %s in the scrape", want);
    }
    snprintf(want, sizeof want, "lock=\"%s\"", sc.mutex);
    CU_ASSERT(strstr(page, want) != NULL);
  }
  for (i = 0; i < 2; i++)
    unlink(file[i]);
  rmdir(dir);
  scene_end(&sc);
}

/* --label: a bad name is a usage error that says why. */
static void test_label_usage(void) {
  static const char *const bad[] = {"x", "=v", "1a=v", "a-b=v", "__a=v",
                                    "lock=v", "a="};
  char out[1024], err[1024];
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    zkt_check(run_question((const char *const[]){"-s", "127.0.0.1:1",
                                                 "--list", "a/", "--format",
                                                 "prometheus", "--label",
                                                 bad[i], NULL},
                           out, sizeof out, err, sizeof err) == 2,
              "--label %s: not a usage error", bad[i]);
    CU_ASSERT(strncmp(err, "zklock: --label", 15) == 0);
  }
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", "127.0.0.1:1",
                                                     "--list", "a/", "--label",
                                                     "a=b", NULL},
                               out, sizeof out, err, sizeof err),
                  2);
}

/* Locks whose name starts with "locks" or "leases" (the name rules allow
 * those as a first segment) are in every view of --list /: the table,
 * json, prometheus and --watch (issue 24 item 7: the walk took /locks/locks
 * and /locks/leases for a semaphore's places and hid them). A semaphore
 * named "leases" shows as one lock, its places as nothing. */
static void test_locks_leases_names(void) {
  char u[64], name[4][128], want[640], out[32768], err[1024], line[1024];
  static const char *const kind[4] = {"mutex", "semaphore", "mutex",
                                      "election"};
  zkl_session *s = zkt_session(10000);
  zkl_lock *l[4];
  bool seen[4] = {false};
  proc p;
  int i, rc, all = 0;
  zkt_name(u, sizeof u, "view-ll");
  snprintf(name[0], sizeof name[0], "locks");
  snprintf(name[1], sizeof name[1], "leases");
  snprintf(name[2], sizeof name[2], "locks/%s", u);
  snprintf(name[3], sizeof name[3], "leases/%s/y", u);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s, name[0]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&l[1], s, name[1], 2), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[2], s, name[2]), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&l[3], s, name[3], "id"), ZKL_OK);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(zkl_lock_acquire(l[i], T_WAIT, NULL), ZKL_OK);
  /* the table: NAME KIND HOLDERS WAITERS ... */
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(), "-H",
                                                     "--list", "/", NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  for (i = 0; i < 4; i++) {
    snprintf(want, sizeof want, "\n%s\t%s\t1\t0\t", name[i], kind[i]);
    zkt_check(strstr(out, want) != NULL ||
                  strncmp(out, want + 1, strlen(want + 1)) == 0,
              "no line for %s in:\n%s", name[i], out);
  }
  CU_ASSERT(strstr(out, "leases/locks\t") == NULL &&
            strstr(out, "leases/leases\t") == NULL);
  /* json */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", "/",
                                         "--format", "json", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  for (i = 0; i < 4; i++) {
    snprintf(want, sizeof want, "{\"name\":\"%s\",\"kind\":\"%s\",", name[i],
             kind[i]);
    zkt_check(strstr(out, want) != NULL, "no %s in:\n%s", want, out);
  }
  /* prometheus */
  CU_ASSERT_EQUAL(
      run_question((const char *const[]){"-s", zkt_hosts(), "--list", "/",
                                         "--format", "prometheus", NULL},
                   out, sizeof out, err, sizeof err),
      0);
  for (i = 0; i < 4; i++) {
    snprintf(want, sizeof want, "\nzklock_holders{lock=\"%s\",kind=\"%s\",",
             name[i], kind[i]);
    zkt_check(strstr(out, want) != NULL, "no %s in:\n%s", want, out);
  }
  /* --watch, on a pipe: the first drawing has them all */
  spawn(&p, "-s", zkt_hosts(), "-H", "--list", "/", "--watch", NULL);
  while (all < 4 && read_line(p.out, line, sizeof line, T_WAIT) > 0)
    for (i = 0; i < 4; i++) {
      snprintf(want, sizeof want, "%s\t%s\t", name[i], kind[i]);
      if (!seen[i] && strncmp(line, want, strlen(want)) == 0) {
        seen[i] = true;
        all++;
      }
    }
  for (i = 0; i < 4; i++)
    zkt_check(seen[i], "--watch did not show %s", name[i]);
  CU_ASSERT(kill(p.pid, SIGTERM) == 0);
  rc = wait_exit(&p, T_WAIT);
  if (rc != 0) {
    static char said[16384];
    said[0] = '\0';
    read_all(p.err, said, sizeof said, 1000);
    printf("\n    zklock --watch exited %d after SIGTERM; it said:\n%s", rc,
           said);
    CU_FAIL("zklock --watch did not exit 0 after SIGTERM");
  }
  cleanup(&p);
  for (i = 3; i >= 0; i--) {
    CU_ASSERT_EQUAL(zkl_lock_release(l[i]), ZKL_OK);
    zkl_lock_free(l[i]);
  }
  zkl_session_close(s, NULL);
  zkt_assert_no_contender(name[2]);
  zkt_assert_no_contender(name[3]);
}

/* Bad usage exits 2 before anything talks to ZooKeeper. */
static void test_usage(void) {
  static const char *const bad[][6] = {
      {"--watch", "x", "--", "true", NULL},
      {"--format", "json", "x", "--", "true", NULL},
      {"--list", "a/", "--format", "yaml", NULL},
      {"--list", "a/", "--watch", "--format", "json", NULL},
      {"--list", "a//", NULL},
      {"--leader", "a", "--format", "json", NULL},
      {"--revoke", "a", "--watch", NULL}};
  char out[1024], err[1024];
  size_t i;
  for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *args[10] = {"-s", "127.0.0.1:1"};
    int j;
    for (j = 0; bad[i][j]; j++)
      args[2 + j] = bad[i][j];
    args[2 + j] = NULL;
    zkt_check(run_question(args, out, sizeof out, err, sizeof err) == 2,
              "case %zu: not a usage error", i);
    CU_ASSERT(strncmp(err, "zklock: ", 8) == 0);
  }
}

/* ------------------------------------------------------------------ tmux */

static char tmux_sock[64];

/* Runs a tmux command on the test's own server: its exit status; out (if
 * not NULL) its stdout. */
static int tmux(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int tmux(char *out, size_t len, const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  FILE *p;
  size_t n = 0;
  int rc;
  int at = snprintf(cmd, sizeof cmd, "tmux -L %s ", tmux_sock);
  size_t used;
  va_start(ap, fmt);
  vsnprintf(cmd + at, sizeof cmd - (size_t)at, fmt, ap);
  va_end(ap);
  used = strlen(cmd);
  snprintf(cmd + used, sizeof cmd - used, " 2>/dev/null");
  if (!(p = popen(cmd, "r")))
    return -1;
  if (out) {
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
  } else {
    char sink[256];
    while (fread(sink, 1, sizeof sink, p) > 0)
      ;
  }
  rc = pclose(p);
  return rc;
}

/* The pane's text, runs of blanks made one space. */
static void capture(char *out, size_t len) {
  char raw[16384], *r, *w;
  if (tmux(raw, sizeof raw, "capture-pane -p -t view") != 0)
    raw[0] = '\0';
  for (r = raw, w = out; *r && (size_t)(w - out) + 1 < len; r++) {
    if ((*r == ' ' || *r == '\t') && w > out && w[-1] == ' ')
      continue;
    *w++ = *r == '\t' ? ' ' : *r;
  }
  *w = '\0';
}

/* Waits (bounded) until the pane shows want. */
static bool pane_shows(const char *want, char *pane, size_t len) {
  int64_t until = zkt_now_ms() + T_WAIT;
  struct timespec tick = {0, 20 * 1000000};
  do {
    capture(pane, len);
    if (strstr(pane, want))
      return true;
  } while (zkt_now_ms() < until && nanosleep(&tick, NULL) == 0);
  fprintf(stderr, "\nthe pane never showed '%s':\n%s\n", want, pane);
  return false;
}

/* Starts `zklock --list PREFIX --watch` in a detached tmux session "view"
 * of width x height on the test's tmux server (tmux_sock), and puts that
 * server's socket path in sock_path, to take away with it (view_stop). */
static void view_start(int width, int height, const char *prefix,
                       char *sock_path, size_t len) {
  CU_ASSERT_EQUAL(
      tmux(NULL, 0,
           "new-session -d -s view -x %d -y %d "
           "\"sh -c '%s -s %s --list %s --watch; echo zklock exited \\$?; "
           "exec cat'\"",
           width, height, ZKLOCK, zkt_hosts(), prefix),
      0);
  if (tmux(sock_path, len, "display -p -t view '#{socket_path}'") != 0)
    sock_path[0] = '\0';
  sock_path[strcspn(sock_path, "\n")] = '\0';
}

/* Ends the tmux server of view_start, and its socket. */
static void view_stop(const char *sock_path) {
  tmux(NULL, 0, "kill-server");
  if (sock_path[0])
    unlink(sock_path);
}

/* --watch in a terminal: it shows the locks, redraws when one changes
 * (the mutex's holder lets go: one waiter fewer), and q ends it with
 * status 0, the terminal given back (the alternate screen left). */
static void test_watch(void) {
  char prefix[80], want[256], pane[16384], sock_path[512] = "";
  scene sc;
  if (system("tmux -V >/dev/null 2>&1") != 0) {
    fprintf(stderr, "no tmux: --watch not tested\n");
    return;
  }
  scene_set(&sc);
  snprintf(tmux_sock, sizeof tmux_sock, "zklock-view-%ld", (long)getpid());
  snprintf(prefix, sizeof prefix, "%s/", sc.base);
  view_start(180, 40, prefix, sock_path, sizeof sock_path);
  snprintf(want, sizeof want, "%s mutex 1 2 ", sc.mutex);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  CU_ASSERT(strstr(pane, "(q: quit)") != NULL);
  snprintf(want, sizeof want, "%s semaphore 2 1 ", sc.sem);
  CU_ASSERT(strstr(pane, want) != NULL);
  /* a change: the holder lets go, the first waiter holds */
  CU_ASSERT_EQUAL(zkl_lock_release(sc.m[0]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&sc.got[0], 1, T_WAIT), ZKL_OK);
  snprintf(want, sizeof want, "%s mutex 1 1 ", sc.mutex);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  /* and again: nobody waits any more */
  CU_ASSERT_EQUAL(zkl_lock_release(sc.m[1]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&sc.got[1], 1, T_WAIT), ZKL_OK);
  snprintf(want, sizeof want, "%s mutex 1 0 ", sc.mutex);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  CU_ASSERT_EQUAL(tmux(NULL, 0, "send-keys -t view q"), 0);
  CU_ASSERT(pane_shows("zklock exited 0", pane, sizeof pane));
  CU_ASSERT(strstr(pane, "(q: quit)") == NULL); /* the screen given back */
  tmux(NULL, 0, "kill-session -t view");
  view_stop(sock_path);
  scene_end(&sc);
}

/* The n-th field (0: KIND) after name on its line in the pane ("" if
 * none). */
static void pane_field(const char *pane, const char *name, int n, char *out,
                       size_t len) {
  char want[256];
  const char *at;
  int i;
  out[0] = '\0';
  snprintf(want, sizeof want, "\n%s ", name);
  if (!(at = strstr(pane, want)))
    return;
  at += strlen(want);
  for (i = 0; i < n && at; i++)
    at = strchr(at, ' ') ? strchr(at, ' ') + 1 : NULL;
  if (at)
    snprintf(out, len, "%.*s", (int)strcspn(at, " \n"), at);
}

/* --watch in a terminal: a lock that a real zklock takes under a parent
 * that did not exist (a semaphore, its places made then) shows at once,
 * with no other change to wake the view; and HELD_S moves on with the
 * clock while nothing changes in ZooKeeper. */
static void test_watch_new_parent_and_tick(void) {
  char prefix[80], name[128], want[256], pane[16384], sock_path[512] = "",
      held[32], held2[32];
  int64_t until;
  scene sc;
  proc p;
  zkl_lock *marker = NULL;
  if (system("tmux -V >/dev/null 2>&1") != 0) {
    CU_FAIL("no tmux (scripts/deps installs it)");
    return;
  }
  scene_set(&sc);
  snprintf(tmux_sock, sizeof tmux_sock, "zklock-view2-%ld", (long)getpid());
  snprintf(prefix, sizeof prefix, "%s/", sc.base);
  snprintf(name, sizeof name, "%s/new/builds", sc.base);
  view_start(180, 40, prefix, sock_path, sizeof sock_path);
  snprintf(want, sizeof want, "%s mutex 1 2 ", sc.mutex);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  /* the clock: HELD_S of the mutex changes with nothing done */
  pane_field(pane, sc.mutex, 3 /* HELD_S */, held, sizeof held);
  CU_ASSERT(held[0] != '\0');
  until = zkt_now_ms() + T_WAIT;
  do {
    struct timespec tick = {0, 50 * 1000000};
    nanosleep(&tick, NULL);
    capture(pane, sizeof pane);
    pane_field(pane, sc.mutex, 3 /* HELD_S */, held2, sizeof held2);
  } while (strcmp(held, held2) == 0 && zkt_now_ms() < until);
  zkt_check(strcmp(held, held2) != 0 && atof(held2) > atof(held),
            "HELD_S stayed %s", held);
  /* A parent that leads to no lock yet, made first (a container: the
   * server reaps it once the children the lock makes are gone). Then a
   * marker lock beside it: once the view shows the marker, it has listed
   * the prefix after the parent appeared, and armed whatever it arms under
   * it (its requests are answered in order). The view must watch that
   * parent: nothing else wakes it when the lock is taken under it (the
   * marker is held until then: its container, reaped once empty, would
   * wake it). */
  {
    char parent[160], path[200];
    snprintf(parent, sizeof parent, "%s/new", sc.base);
    zkt_parent(path, sizeof path, parent);
    CU_ASSERT_EQUAL(zoo_create(zkt_observer(), path, NULL, -1,
                               &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0),
                    ZOK);
    snprintf(parent, sizeof parent, "%s/marker", sc.base);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&marker, sc.s, parent), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(marker, T_WAIT, NULL), ZKL_OK);
    snprintf(want, sizeof want, "%s mutex 1 0 ", parent);
    CU_ASSERT(pane_shows(want, pane, sizeof pane));
  }
  /* a semaphore under that parent, taken by a real zklock */
  spawn(&p, "-s", zkt_hosts(), "--limit", "3", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT(command_started(&p, want, sizeof want));
  snprintf(want, sizeof want, "%s semaphore 1 0 ", name);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  zkl_lock_free(marker); /* released */
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  tmux(NULL, 0, "send-keys -t view q");
  tmux(NULL, 0, "kill-session -t view");
  view_stop(sock_path);
  scene_end(&sc);
  zkt_assert_no_contender(name);
}

/* Splits a pane's line in place at runs of spaces into f (at most max):
 * the number of fields. */
static int pane_fields(char *line, char **f, int max) {
  char *save = NULL, *t;
  int n = 0;
  for (t = strtok_r(line, " ", &save); t && n < max;
       t = strtok_r(NULL, " ", &save))
    f[n++] = t;
  return n;
}

/* --watch on a small pane (60x8) with 12 locks: the title and the header
 * stay on screen (no line wraps, no scroll), the columns line up, and a
 * last line says how many more there are. */
static void small_pane_at(int width) {
  char base[64], name[12][96], pane[16384], raw[16384], sock_path[512] = "";
  zkl_session *s = zkt_session(10000);
  zkl_lock *l[12];
  const char *line;
  int i, n;
  if (system("tmux -V >/dev/null 2>&1") != 0) {
    CU_FAIL("no tmux (scripts/deps installs it)");
    zkl_session_close(s, NULL);
    return;
  }
  zkt_name(base, sizeof base, "view-small");
  for (i = 0; i < 12; i++) {
    snprintf(name[i], sizeof name[i], "%s/lock%02d", base, i);
    CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[i], s, name[i]), ZKL_OK);
    CU_ASSERT_EQUAL(zkl_lock_acquire(l[i], T_WAIT, NULL), ZKL_OK);
  }
  snprintf(tmux_sock, sizeof tmux_sock, "zklock-view3-%ld", (long)getpid());
  /* width < 0: the edge two characters into HELD_S's values (NAME, then
   * KIND "mutex" and HOLDERS, WAITERS as wide as their headers, two
   * spaces apart), where a cut would leave "1." */
  if (width < 0)
    width = (int)strlen(name[0]) + 2 + 5 + 2 + 7 + 2 + 7 + 2 + 2;
  {
    char prefix[80];
    snprintf(prefix, sizeof prefix, "%s/", base);
    view_start(width, 8, prefix, sock_path, sizeof sock_path);
  }
  CU_ASSERT(pane_shows(" more", pane, sizeof pane));
  if (tmux(raw, sizeof raw, "capture-pane -p -t view") != 0)
    raw[0] = '\0';
  /* the title first, then a blank line, then the header */
  zkt_check(strncmp(raw, "zklock --list ", 14) == 0, "pane:\n%s", raw);
  line = strchr(raw, '\n');
  zkt_check(line && strncmp(line, "\n\nNAME ", 7) == 0, "pane:\n%s", raw);
  /* aligned: KIND starts in the same column on the header and a lock */
  if (line) {
    const char *hdr = line + 2, *row = strchr(hdr, '\n');
    const char *k1 = strstr(hdr, "KIND"), *k2 = row ? strstr(row, "mutex")
                                                   : NULL;
    zkt_check(k1 && k2 && k1 - hdr == k2 - (row + 1), "not aligned:\n%s",
              raw);
  }
  /* 12 locks do not fit: "... N more" with N the rest */
  for (n = 0, line = raw; (line = strstr(line, base)); line++)
    n++;
  zkt_check(n > 0 && n < 12 && strstr(raw, " more") != NULL,
            "%d locks shown:\n%s", n, raw);
  /* the title's time is whole, or not there */
  {
    const char *t = strstr(raw, "   20");
    size_t tl = t ? strcspn(t + 3, " \n") : 0;
    zkt_check(!t || tl == strlen("2026-12-03T18:00:00+00:00"),
              "title's time cut:\n%s", raw);
  }
  /* no number cut at the edge: each field of a lock's line is whole (a
   * column that does not fit goes whole) */
  {
    regex_t whole[5];
    static const char *const re[5] = {"^[0-9]+$", "^[0-9]+$",
                                      "^[0-9]+\\.[0-9]$", "^(-|[0-9]+\\.[0-9])$",
                                      "^[0-9]+$"};
    char copy[16384], *row, *save = NULL;
    int k;
    for (k = 0; k < 5; k++)
      CU_ASSERT_EQUAL_FATAL(regcomp(&whole[k], re[k], REG_EXTENDED), 0);
    snprintf(copy, sizeof copy, "%s", raw);
    for (row = strtok_r(copy, "\n", &save); row;
         row = strtok_r(NULL, "\n", &save)) {
      char *f[12];
      int nf;
      if (strncmp(row, base, strlen(base)) != 0)
        continue;
      nf = pane_fields(row, f, 12);
      for (k = 2; k < nf && k < 7; k++)
        zkt_check(regexec(&whole[k - 2], f[k], 0, NULL, 0) == 0,
                  "field %d cut: '%s' in\n%s", k, f[k], raw);
      /* the token, when shown, is the lock's own */
      if (nf >= 7) {
        int i2;
        for (i2 = 0; i2 < 12 && strncmp(row, name[i2], strlen(name[i2])); i2++)
          ;
        if (i2 < 12)
          zkt_check(atoll(f[6]) == zkl_lock_token(l[i2]),
                    "token %s, not %lld", f[6],
                    (long long)zkl_lock_token(l[i2]));
      }
    }
    for (k = 0; k < 5; k++)
      regfree(&whole[k]);
  }
  tmux(NULL, 0, "send-keys -t view q");
  tmux(NULL, 0, "kill-session -t view");
  view_stop(sock_path);
  for (i = 0; i < 12; i++)
    zkl_lock_free(l[i]);
  zkl_session_close(s, NULL);
}

static void test_watch_small_pane(void) { small_pane_at(60); }

/* --watch on a pane whose edge falls inside a column of numbers: the
 * column goes whole (it used to show "1." of "1.5"). */
static void test_watch_narrow_numbers(void) { small_pane_at(-1); }

/* --leader NAME --watch: a line "ID<TAB>TOKEN" for the leader, and a new
 * one when the leadership changes (real zklock --elect contenders: the
 * first's command ends, the second leads); SIGTERM ends it, status 0. */
static void test_leader_watch(void) {
  char name[96], line[512], want[128];
  proc c[2], w;
  int i;
  zkt_name(name, sizeof name, "view-leader");
  spawn(&c[0], "-s", zkt_hosts(), "--elect", "first", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started(&c[0], line, sizeof line));
  spawn(&c[1], "-s", zkt_hosts(), "-q", "--elect", "second", name, "--",
        HELPER("hold"), NULL);
  spawn(&w, "-s", zkt_hosts(), "--leader", name, "--watch", NULL);
  CU_ASSERT(read_line(w.out, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT(strncmp(line, "first\t", 6) == 0 && atoll(line + 6) > 0);
  /* the second is queued before the first lets go (its node is there) */
  snprintf(want, sizeof want, "/locks/%s", name);
  CU_ASSERT_EQUAL(zkt_wait_children(want, 2, T_WAIT), 2);
  go(&c[0]);
  CU_ASSERT_EQUAL(wait_exit(&c[0], T_WAIT), 0);
  CU_ASSERT(command_started(&c[1], line, sizeof line));
  CU_ASSERT(read_line(w.out, line, sizeof line, T_WAIT) > 0);
  zkt_check(strncmp(line, "second\t", 7) == 0 && atoll(line + 7) > 0,
            "after the change: %s", line);
  CU_ASSERT(kill(w.pid, SIGTERM) == 0);
  CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
  go(&c[1]);
  CU_ASSERT_EQUAL(wait_exit(&c[1], T_WAIT), 0);
  for (i = 0; i < 2; i++)
    cleanup(&c[i]);
  cleanup(&w);
  zkt_assert_no_contender(name);
}


/* Reads fd's lines (bounded) until one that starts with want; copies it
 * into line. */
static bool line_starting(int fd, const char *want, char *line, size_t len) {
  int64_t until = zkt_now_ms() + T_WAIT;
  while (zkt_now_ms() < until) {
    int n = read_line(fd, line, len, (int)(until - zkt_now_ms()));
    if (n <= 0)
      break;
    if (strncmp(line, want, strlen(want)) == 0)
      return true;
  }
  fprintf(stderr, "\nno line starting with '%s'\n", want);
  return false;
}

/* Waits (bounded) until the pane no longer shows gone. */
static bool pane_lacks(const char *gone, char *pane, size_t len) {
  int64_t until = zkt_now_ms() + T_WAIT;
  struct timespec tick = {0, 20 * 1000000};
  do {
    capture(pane, len);
    if (!strstr(pane, gone))
      return true;
  } while (zkt_now_ms() < until && nanosleep(&tick, NULL) == 0);
  fprintf(stderr, "\nthe pane still shows '%s':\n%s\n", gone, pane);
  return false;
}

/* The server stops under three views and starts again: --watch on a
 * pipe prints a "disconnected at" line, --leader --watch a
 * "-<TAB>-<TAB>disconnected" line, --watch on a terminal a banner, its
 * HELD_S no longer moving on; when the server is back each says so and
 * shows the locks (the leader) again, live. */
static void test_watch_disconnected(void) {
  char base[64], mutex[128], elect[128], prefix[80], want[256], line[1024],
      pane[16384], sock_path[512] = "", held[32], held2[32], args[700],
      banner[256];
  zkl_session *s;
  zkl_lock *m, *el;
  proc v, lw;
  int64_t until;
  bool have_tmux = system("tmux -V >/dev/null 2>&1") == 0;
  if (!zkt_zkdir()) {
    fprintf(stderr, "ZKL_TEST_HOSTS: the server cannot be stopped here\n");
    return;
  }
  CU_ASSERT_FATAL(have_tmux);
  zkt_name(base, sizeof base, "view-gone");
  snprintf(mutex, sizeof mutex, "%s/mutex", base);
  snprintf(elect, sizeof elect, "%s/elect", base);
  snprintf(prefix, sizeof prefix, "%s/", base);
  s = zkt_session(10000); /* lives through the server's restart */
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&m, s, mutex), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(m, T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_election(&el, s, elect, "alpha"),
                        ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(el, T_WAIT, NULL), ZKL_OK);
  spawn(&v, "-s", zkt_hosts(), "--list", prefix, "--watch", NULL);
  spawn(&lw, "-s", zkt_hosts(), "--leader", elect, "--watch", NULL);
  snprintf(tmux_sock, sizeof tmux_sock, "zklock-view4-%ld", (long)getpid());
  view_start(180, 40, prefix, sock_path, sizeof sock_path);
  snprintf(want, sizeof want, "%s\tmutex\t1\t0\t", mutex);
  CU_ASSERT(line_starting(v.out, want, line, sizeof line));
  CU_ASSERT(line_starting(lw.out, "alpha\t", line, sizeof line));
  snprintf(want, sizeof want, "%s mutex 1 0 ", mutex);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));

  /* not FATAL from here on: the views and the pane are ended below,
   * whatever happened */
  snprintf(args, sizeof args, "kill '%s' 1 KILL", zkt_zkdir());
  CU_ASSERT_EQUAL(zkt_zkserver(args), 0);
  CU_ASSERT(line_starting(v.out, "disconnected at ", line, sizeof line));
  CU_ASSERT(strstr(line, "not live") != NULL);
  CU_ASSERT(line_starting(lw.out, "-\t-\tdisconnected\t", line, sizeof line));
  CU_ASSERT(pane_shows("DISCONNECTED from ZooKeeper", pane, sizeof pane));
  CU_ASSERT(strstr(pane, "NOT LIVE") != NULL);
  /* the clock no longer moves HELD_S on: once the banner's count of
   * seconds has moved (the screen was drawn again), HELD_S is the same */
  pane_field(pane, mutex, 3 /* HELD_S */, held, sizeof held);
  CU_ASSERT(held[0] != '\0');
  {
    const char *b = strstr(pane, "DISCONNECTED");
    if (!b)
      b = "no banner";
    snprintf(banner, sizeof banner, "%.*s", (int)strcspn(b, "\n"), b);
  }
  until = zkt_now_ms() + T_WAIT;
  do {
    struct timespec tick = {0, 50 * 1000000};
    nanosleep(&tick, NULL);
    capture(pane, sizeof pane);
  } while (strstr(pane, banner) && zkt_now_ms() < until &&
           strcmp(banner, "no banner") != 0);
  CU_ASSERT(strstr(pane, "DISCONNECTED") && !strstr(pane, banner));
  pane_field(pane, mutex, 3 /* HELD_S */, held2, sizeof held2);
  zkt_check(strcmp(held, held2) == 0, "HELD_S moved on while disconnected: "
            "%s, then %s", held, held2);

  snprintf(args, sizeof args, "restart '%s' 1", zkt_zkdir());
  if (zkt_zkserver(args) != 0)
    CU_ASSERT_EQUAL(zkt_zkserver(args), 0); /* a port race */
  CU_ASSERT(line_starting(v.out, "reconnected at ", line, sizeof line));
  snprintf(want, sizeof want, "%s\tmutex\t1\t0\t", mutex);
  CU_ASSERT(line_starting(v.out, want, line, sizeof line));
  CU_ASSERT(line_starting(lw.out, "-\t-\treconnected\t", line, sizeof line));
  CU_ASSERT(line_starting(lw.out, "alpha\t", line, sizeof line));
  CU_ASSERT(pane_lacks("DISCONNECTED", pane, sizeof pane));
  snprintf(want, sizeof want, "%s mutex 1 0 ", mutex);
  CU_ASSERT(strstr(pane, want) != NULL);

  tmux(NULL, 0, "send-keys -t view q");
  tmux(NULL, 0, "kill-session -t view");
  view_stop(sock_path);
  CU_ASSERT(kill(v.pid, SIGTERM) == 0);
  CU_ASSERT(kill(lw.pid, SIGTERM) == 0);
  CU_ASSERT_EQUAL(wait_exit(&v, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&lw, T_WAIT), 0);
  cleanup(&v);
  cleanup(&lw);
  CU_ASSERT_EQUAL(zkl_lock_release(m), ZKL_OK);
  zkl_lock_free(m);
  zkl_lock_free(el);
  zkl_session_close(s, NULL);
  zkt_assert_no_contender(mutex);
  zkt_assert_no_contender(elect);
}

/* --watch: HELD_S counts from the grant the view saw, not from the node's
 * creation: a waiter that waited 2 s and is then granted shows a HELD_S
 * below that wait (it used to show its wait and more). */
static void test_watch_held_from_grant(void) {
  char base[64], name[128], prefix[80], want[256], pane[16384],
      sock_path[512] = "", waited[32] = "", held[32];
  zkl_session *s = zkt_session(10000);
  zkl_lock *l[2];
  zkt_rec got;
  int64_t until;
  if (system("tmux -V >/dev/null 2>&1") != 0) {
    CU_FAIL("no tmux (scripts/deps installs it)");
    zkl_session_close(s, NULL);
    return;
  }
  zkt_name(base, sizeof base, "view-grant");
  snprintf(name, sizeof name, "%s/m", base);
  snprintf(prefix, sizeof prefix, "%s/", base);
  zkt_rec_init(&got);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[0], s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new(&l[1], s, name), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(l[0], T_WAIT, NULL), ZKL_OK);
  CU_ASSERT_EQUAL(zkl_lock_acquire_async(l[1], -1, zkt_on_acquired, &got),
                  ZKL_OK);
  snprintf(tmux_sock, sizeof tmux_sock, "zklock-view5-%ld", (long)getpid());
  view_start(180, 40, prefix, sock_path, sizeof sock_path);
  snprintf(want, sizeof want, "%s mutex 1 1 ", name);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  /* the waiter has waited 2 s (the view's clock moves WAITED_S on) */
  until = zkt_now_ms() + T_WAIT;
  do {
    struct timespec tick = {0, 50 * 1000000};
    nanosleep(&tick, NULL);
    capture(pane, sizeof pane);
    pane_field(pane, name, 4, waited, sizeof waited);
  } while (atof(waited) < 2.0 && zkt_now_ms() < until);
  CU_ASSERT(atof(waited) >= 2.0);
  CU_ASSERT_EQUAL(zkl_lock_release(l[0]), ZKL_OK);
  CU_ASSERT_EQUAL(zkt_rec_wait(&got, 1, T_WAIT), ZKL_OK);
  snprintf(want, sizeof want, "%s mutex 1 0 ", name);
  CU_ASSERT(pane_shows(want, pane, sizeof pane));
  pane_field(pane, name, 3, held, sizeof held);
  zkt_check(held[0] && atof(held) < atof(waited),
            "HELD_S %s after a wait of %s s", held, waited);
  tmux(NULL, 0, "send-keys -t view q");
  tmux(NULL, 0, "kill-session -t view");
  view_stop(sock_path);
  zkl_lock_free(l[0]);
  zkl_lock_free(l[1]);
  zkl_session_close(s, NULL);
  zkt_assert_no_contender(name);
}

static const zkt_test tests[] = {
    {"--list PREFIX/: every lock under it, the most contended first",
     test_table},
    {"--list NAME while NAME/web is held: stderr names NAME/",
     test_list_name_above_locks},
    {"--format json: one document with the counts", test_json},
    {"--list NAME --format json: the lock's contenders", test_json_one_lock},
    {"--format prometheus: the text format, the values", test_prometheus},
    {"--format prometheus: zklock_up 0 when unreachable, an idle lock's zeros",
     test_prometheus_up_and_idle},
    {"--format, --watch: bad usage", test_usage},
    {"--format prometheus: two textfiles in one node_exporter",
     test_node_exporter},
    {"--label: bad names refused", test_label_usage},
    {"names that start with locks or leases are in every view",
     test_locks_leases_names},
    {"--watch: redrawn when a lock changes, q quits", test_watch},
    {"--watch: a lock under a new parent at once, HELD_S ticks",
     test_watch_new_parent_and_tick},
    {"--watch: a small pane keeps its title and header", test_watch_small_pane},
    {"--watch: a pane's edge never cuts a number", test_watch_narrow_numbers},
    {"--leader --watch: a line at each change of leader", test_leader_watch},
    {"--watch: HELD_S from the grant the view saw", test_watch_held_from_grant},
    {"--watch, --leader --watch: say when ZooKeeper is gone, and back",
     test_watch_disconnected},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_view", tests);
}
