/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_modes.c - the kinds of lock zklock takes besides the mutex
 * (--read, --write, --limit, --elect), the questions it answers (--leader,
 * --list with the kind of each node, --revoke and --on-revoke), and the
 * events -v prints, run as a program against a real ZooKeeper. Who ran
 * when is read from the commands' own records (one monotonic clock), never
 * from sleeps; see clitest.h for how zklock and its command are run. */
#define _GNU_SOURCE 1
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clitest.h"

/* ---------------------------------------------------------------- helpers */

/* The record `what` ("start", "end") of the helper pid: its time, or -1. */
static long long at(const log_rec *r, int n, long pid, const char *what) {
  int i;
  for (i = 0; i < n; i++)
    if (r[i].pid == pid && strcmp(r[i].what, what) == 0)
      return r[i].ns;
  return -1;
}

/* --list -H NAME: up to max lines of 9 fields. Returns the number. */
static int list(const char *name, char *out, size_t len, char *f[][9],
                int max) {
  char err[1024], *line, *next;
  int n = 0;
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(), "-H",
                                                     "--list", name, NULL},
                               out, len, err, sizeof err),
                  0);
  CU_ASSERT_STRING_EQUAL(err, "");
  for (line = out; *line && n < max; line = next) {
    next = line + strcspn(line, "\n");
    if (*next)
      *next++ = '\0';
    CU_ASSERT_EQUAL(clitest_fields(line, f[n], 9), 9);
    n++;
  }
  return n;
}

/* "zklock: WHAT /locks/NAME: N ahead, held by HOST:" */
static bool status_is(const char *line, const char *what, const char *name,
                      int ahead, const char *verb) {
  char want[512];
  snprintf(want, sizeof want, "zklock: %s /locks/%s: %d ahead, %s by ", what,
           name, ahead, verb);
  if (strncmp(line, want, strlen(want)) == 0)
    return true;
  fprintf(stderr, "\nwanted: %s...\ngot: %s\n", want, line);
  return false;
}

/* ------------------------------------------------------------------ tests */

/* --read commands overlap: both start before either is told to end; a
 * --write one queued behind them starts only after both ended, and a
 * --read one queued behind the writer only after it ended. The waiting
 * lines say what each waits to do, and for whom. */
static void test_read_write(void) {
  char name[64], parent[128], log[PATH_MAX], line[1024], node[256];
  long long token;
  log_rec r[16];
  proc r1, r2, w, r3;
  int n;
  zkt_name(name, sizeof name, "rw");
  zkt_parent(parent, sizeof parent, name);
  log_name(log, sizeof log, name);
  spawn(&r1, "-s", zkt_hosts(), "--read", name, "--", HELPER("log"), log, NULL);
  spawn(&r2, "-s", zkt_hosts(), "--read", name, "--", HELPER("log"), log, NULL);
  CU_ASSERT_FATAL(command_started_at(&r1, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "-__READ__") != NULL);
  CU_ASSERT_FATAL(command_started_at(&r2, &token, node, sizeof node));
  /* both run now: neither has been told to end */
  /* -v: on a pipe the waiting line comes with it only (issue 34) */
  spawn(&w, "-s", zkt_hosts(), "-v", "--write", name, "--", HELPER("log"), log,
        NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 3, T_WAIT), 3);
  CU_ASSERT(read_status(w.err, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT(status_is(line, "waiting to write", name, 2, "held"));
  CU_ASSERT(strstr(line, " and 1 more") != NULL); /* two readers hold */
  spawn(&r3, "-s", zkt_hosts(), "-v", "--read", name, "--", HELPER("log"),
        log, NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 4, T_WAIT), 4);
  CU_ASSERT(read_status(r3.err, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT(status_is(line, "waiting to read", name, 3, "held"));
  go(&r1);
  go(&r2);
  CU_ASSERT_EQUAL(wait_exit(&r1, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&r2, T_WAIT), 0);
  CU_ASSERT(command_started_at(&w, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "-__WRIT__") != NULL);
  go(&w);
  CU_ASSERT_EQUAL(wait_exit(&w, T_WAIT), 0);
  CU_ASSERT(command_started_at(&r3, &token, node, sizeof node));
  go(&r3);
  CU_ASSERT_EQUAL(wait_exit(&r3, T_WAIT), 0);
  n = read_log(log, r, 16);
  unlink(log);
  CU_ASSERT_EQUAL(n, 8);
  /* the readers overlapped; the writer came after both, alone */
  CU_ASSERT(at(r, n, r1.helper, "start") < at(r, n, r2.helper, "end"));
  CU_ASSERT(at(r, n, r2.helper, "start") < at(r, n, r1.helper, "end"));
  CU_ASSERT(at(r, n, w.helper, "start") > at(r, n, r1.helper, "end"));
  CU_ASSERT(at(r, n, w.helper, "start") > at(r, n, r2.helper, "end"));
  CU_ASSERT(at(r, n, r3.helper, "start") > at(r, n, w.helper, "end"));
  CU_ASSERT(at(r, n, r3.helper, "start") > 0);
  cleanup(&r1);
  cleanup(&r2);
  cleanup(&w);
  cleanup(&r3);
  assert_no_node(name);
}

/* --shared and --exclusive, as flock(1) names them, are --read and
 * --write: two --shared commands hold the lock at once (read nodes), an
 * --exclusive -n finds it held, an --exclusive one then takes the write
 * side; --list says so. */
static void test_shared_exclusive(void) {
  char name[64], line[256], node[256], out[4096], *f[4][9];
  long long token;
  proc a, b, c;
  zkt_name(name, sizeof name, "flockwords");
  spawn(&a, "-s", zkt_hosts(), "--shared", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "-__READ__") != NULL);
  spawn(&b, "-s", zkt_hosts(), "-n", name, "--shared", "--", HELPER("hold"),
        NULL);
  CU_ASSERT_FATAL(command_started_at(&b, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "-__READ__") != NULL);
  CU_ASSERT_EQUAL_FATAL(list(name, out, sizeof out, f, 4), 2);
  CU_ASSERT_STRING_EQUAL(f[0][8], "read");
  CU_ASSERT_STRING_EQUAL(f[1][8], "read");
  spawn(&c, "-s", zkt_hosts(), "-q", "-n", "--exclusive", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(wait_exit(&c, T_WAIT), 1); /* held: -n gives up */
  CU_ASSERT_EQUAL(read_line(c.report, line, sizeof line, T_WAIT), 0);
  cleanup(&c);
  go(&a);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  spawn(&c, "-s", zkt_hosts(), "--exclusive", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started_at(&c, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "-__WRIT__") != NULL);
  go(&c);
  CU_ASSERT_EQUAL(wait_exit(&c, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  cleanup(&c);
  assert_no_node(name);
}

/* --limit 2: two commands run at once, a third waits (at the gate, its
 * waiting line says all leases are held) and starts only when one of the
 * two ended; a fourth, queued at the gate behind it, says one is ahead
 * there, and starts when the second ended; -n on a full semaphore gives
 * up, naming the holders. */
static void test_limit(void) {
  char name[64], leases[160], gate[160], log[PATH_MAX], line[1024], node[256],
      err[1024], raw[8192];
  long long token;
  log_rec r[16];
  proc a, b, c, d, e;
  int n;
  zkt_name(name, sizeof name, "limit");
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  log_name(log, sizeof log, name);
  spawn(&a, "-s", zkt_hosts(), "--limit", "2", name, "--", HELPER("log"), log,
        NULL);
  spawn(&b, "-s", zkt_hosts(), "--limit", "2", name, "--", HELPER("log"), log,
        NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "/leases/") != NULL && strstr(node, "-lease-"));
  CU_ASSERT_FATAL(command_started_at(&b, &token, node, sizeof node));
  /* full: -n does not wait, and says who holds the leases */
  spawn(&d, "-s", zkt_hosts(), "-v", "-n", "--limit", "2", name, "--",
        HELPER("log"), log, NULL);
  CU_ASSERT_EQUAL(wait_exit(&d, T_WAIT), 1);
  CU_ASSERT(read_all(d.err, raw, sizeof raw, T_WAIT) > 0);
  without_verbose(raw, err, sizeof err);
  snprintf(line, sizeof line, "zklock: /locks/%s is held by %s:", name,
           clit_hostname);
  CU_ASSERT(strncmp(err, line, strlen(line)) == 0);
  CU_ASSERT(strstr(err, " and 1 more; not waiting\n") != NULL);
  cleanup(&d);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, T_WAIT), 2);
  /* the third: it takes the gate, makes its lease node, and waits */
  spawn(&c, "-s", zkt_hosts(), "-v", "--limit", "2", name, "--", HELPER("log"),
        log, NULL);
  CU_ASSERT(read_status(c.err, line, sizeof line, T_WAIT) > 0);
  /* (after its line: its first try's lease node came and went before) */
  CU_ASSERT_EQUAL(zkt_children(leases), 3);
  CU_ASSERT_EQUAL(zkt_children(gate), 1);
  /* two ahead of its lease node: the two leases held */
  CU_ASSERT(status_is(line, "waiting for a lease of", name, 2, "held"));
  CU_ASSERT(strstr(line, " and 1 more") != NULL);
  /* the fourth queues at the gate, behind the third's gate node: it finds
   * its own node there by the path the library gives */
  spawn(&e, "-s", zkt_hosts(), "-v", "--limit", "2", name, "--", HELPER("log"),
        log, NULL);
  CU_ASSERT(read_status(e.err, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_EQUAL(zkt_children(gate), 2);
  CU_ASSERT(status_is(line, "waiting for a lease of", name, 1, "held"));
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started_at(&c, &token, node, sizeof node));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  CU_ASSERT(command_started_at(&e, &token, node, sizeof node));
  CU_ASSERT(strstr(node, "/leases/") != NULL && strstr(node, "-lease-"));
  go(&c);
  go(&e);
  CU_ASSERT_EQUAL(wait_exit(&c, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&e, T_WAIT), 0);
  n = read_log(log, r, 16);
  unlink(log);
  CU_ASSERT_EQUAL(n, 8); /* d's command never ran */
  CU_ASSERT(at(r, n, a.helper, "start") < at(r, n, b.helper, "end"));
  CU_ASSERT(at(r, n, b.helper, "start") < at(r, n, a.helper, "end"));
  CU_ASSERT(at(r, n, c.helper, "start") > at(r, n, a.helper, "end"));
  CU_ASSERT(at(r, n, e.helper, "start") > at(r, n, b.helper, "end"));
  cleanup(&a);
  cleanup(&b);
  cleanup(&c);
  cleanup(&e);
  assert_empty(leases);
  assert_empty(gate);
}

/* --elect: the first candidate leads and runs its command; --leader names
 * it with its token; the second waits, saying who leads, and takes over
 * when the first exits, with a higher token; --list shows both
 * candidates with their ids; with nobody standing, --leader exits 1. */
static void test_elect(void) {
  char name[64], parent[128], log[PATH_MAX], line[1024], node[256], out[4096],
      err[1024], want[512], *f[3][9];
  long long token_a, token_b;
  log_rec r[8];
  proc a, b;
  int n;
  zkt_name(name, sizeof name, "elect");
  zkt_parent(parent, sizeof parent, name);
  log_name(log, sizeof log, name);
  spawn(&a, "-s", zkt_hosts(), "--elect", "alpha", name, "--", HELPER("log"),
        log, NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token_a, node, sizeof node));
  CU_ASSERT(strstr(node, "-latch-") != NULL);
  spawn(&b, "-s", zkt_hosts(), "-v", "--elect", "beta", name, "--",
        HELPER("log"), log, NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  CU_ASSERT(read_status(b.err, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT(status_is(line, "waiting to lead", name, 1, "led"));
  CU_ASSERT(strstr(line, "led by 'alpha' since ") != NULL);

  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--leader", name, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  snprintf(want, sizeof want, "alpha\t%lld\n", token_a);
  CU_ASSERT_STRING_EQUAL(out, want);
  CU_ASSERT_EQUAL_FATAL(list(name, out, sizeof out, f, 3), 2);
  CU_ASSERT_STRING_EQUAL(f[0][6], "alpha");
  CU_ASSERT_STRING_EQUAL(f[0][8], "latch");
  CU_ASSERT_EQUAL(strtoll(f[0][2], NULL, 10), token_a);
  CU_ASSERT_STRING_EQUAL(f[1][6], "beta");
  CU_ASSERT_STRING_EQUAL(f[1][8], "latch");

  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started_at(&b, &token_b, node, sizeof node));
  CU_ASSERT(token_b > token_a);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--leader", name, NULL},
                               out, sizeof out, err, sizeof err),
                  0);
  snprintf(want, sizeof want, "beta\t%lld\n", token_b);
  CU_ASSERT_STRING_EQUAL(out, want);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  assert_no_node(name);
  CU_ASSERT_EQUAL(run_question((const char *const[]){"-s", zkt_hosts(),
                                                     "--leader", name, NULL},
                               out, sizeof out, err, sizeof err),
                  1);
  CU_ASSERT_STRING_EQUAL(out, "");
  snprintf(want, sizeof want, "zklock: nobody leads /locks/%s\n", name);
  CU_ASSERT_STRING_EQUAL(err, want);

  n = read_log(log, r, 8);
  unlink(log);
  CU_ASSERT_EQUAL(n, 4);
  CU_ASSERT(at(r, n, b.helper, "start") > at(r, n, a.helper, "end"));
  cleanup(&a);
  cleanup(&b);
}

/* A leader that stops leading (its node deleted) is a lost lock: the
 * command gets SIGTERM and zklock exits 4. */
static void test_elect_lost(void) {
  char name[64], line[512], node[256], err[2048];
  long long token;
  proc p;
  zkt_name(name, sizeof name, "electlost");
  spawn(&p, "-s", zkt_hosts(), "--elect", "solo", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_FATAL(command_started_at(&p, &token, node, sizeof node));
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0);
  CU_ASSERT(strstr(err, "zklock: lost the lock /locks/") == err);
  cleanup(&p);
  assert_no_node(name);
}

/* --revoke asks the holder: with --on-revoke USR1 its command gets
 * SIGUSR1; without, zklock only says so and the command gets nothing; with
 * nobody holding, --revoke exits 1. Every reader holding a read/write lock
 * is asked, and a semaphore's lease holders too. */
static void test_revoke(void) {
  char name[64], line[1024], node[256], node2[256], out[2048], err[1024],
      want[1024];
  long long token;
  proc a, b;
  const char *const revoke[] = {"-s", zkt_hosts(), "--revoke", name, NULL};
  zkt_name(name, sizeof name, "revoke");

  spawn(&a, "-s", zkt_hosts(), "--on-revoke", "USR1", name, "--",
        HELPER("count"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 0);
  snprintf(want, sizeof want, "%s\n", node);
  CU_ASSERT_STRING_EQUAL(out, want);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 10");
  CU_ASSERT(read_line(a.err, line, sizeof line, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: asked to let go of /locks/%s: sending SIGUSR1 to the "
           "command",
           name);
  CU_ASSERT_STRING_EQUAL(line, want);
  go(&a); /* "count" goes on after signals: it ends when told */
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end");
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  cleanup(&a);

  /* without --on-revoke: said, not passed on */
  spawn(&a, "-s", zkt_hosts(), name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT(read_line(a.err, line, sizeof line, T_WAIT) > 0);
  snprintf(want, sizeof want,
           "zklock: asked to let go of /locks/%s; the command is not told "
           "(see --on-revoke)",
           name);
  CU_ASSERT_STRING_EQUAL(line, want);
  go(&a); /* zklock said it before it could have signalled: "end" is next */
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end");
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  cleanup(&a);
  assert_no_node(name);

  /* nobody to ask */
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 1);
  CU_ASSERT_STRING_EQUAL(out, "");
  snprintf(want, sizeof want, "zklock: nobody holds /locks/%s: nobody to ask\n",
           name);
  CU_ASSERT_STRING_EQUAL(err, want);

  /* two readers hold: both are asked */
  spawn(&a, "-s", zkt_hosts(), "--read", "--on-revoke", "usr2", name, "--",
        HELPER("count"), NULL);
  spawn(&b, "-s", zkt_hosts(), "--read", "--on-revoke", "SIGUSR2", name, "--",
        HELPER("count"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT_FATAL(command_started_at(&b, &token, node2, sizeof node2));
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 0);
  CU_ASSERT(strstr(out, node) != NULL && strstr(out, node2) != NULL);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 12");
  CU_ASSERT(read_line(b.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 12");
  go(&a);
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);

  /* a semaphore's lease holder, asked by number (1: SIGHUP) */
  spawn(&a, "-s", zkt_hosts(), "--limit", "3", "--on-revoke", "1", name, "--",
        HELPER("count"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 0);
  snprintf(want, sizeof want, "%s\n", node);
  CU_ASSERT_STRING_EQUAL(out, want);
  CU_ASSERT(strstr(out, "/leases/") != NULL);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 1");
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  cleanup(&a);
  snprintf(want, sizeof want, "/locks/%s/leases", name);
  assert_empty(want);
  snprintf(want, sizeof want, "/locks/%s/locks", name);
  assert_empty(want);
}

/* A semaphore's lease held by the test itself, through the library. */
static void hold_lease(zkt_holder *h, const char *name, int limit) {
  h->s = zkt_session(10000);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_new_semaphore(&h->l, h->s, name, limit), ZKL_OK);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_acquire(h->l, T_WAIT, &h->token), ZKL_OK);
}

/* The other child of parent than the node `not` (a full path): its path. */
static bool other_child(const char *parent, const char * not, char *out,
                        size_t len) {
  struct String_vector v;
  bool found = false;
  int i;
  if (zoo_get_children(zkt_observer(), parent, 0, &v) != ZOK)
    return false;
  for (i = 0; i < v.count && !found; i++) {
    snprintf(out, len, "%s/%s", parent, v.data[i]);
    found = strcmp(out, not ) != 0;
  }
  deallocate_String_vector(&v);
  return found;
}

/* --revoke on a semaphore of one lease asks its holder only: the
 * contender counting behind it (its lease node made, holding the gate) is
 * no holder, and its node keeps its owner description. */
static void test_revoke_semaphore_waiter(void) {
  char name[64], leases[160], gate[160], line[1024], node[256], waiting[512],
      out[2048], err[1024], want[1024], data[512];
  long long token;
  proc a, b;
  int len = sizeof data - 1;
  const char *const revoke[] = {"-s", zkt_hosts(), "--revoke", name, NULL};
  zkt_name(name, sizeof name, "revokesem");
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  spawn(&a, "-s", zkt_hosts(), "--limit", "1", "--on-revoke", "USR1", name,
        "--", HELPER("count"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  spawn(&b, "-s", zkt_hosts(), "-q", "--limit", "1", "--on-revoke", "USR2",
        name, "--", HELPER("count"), NULL);
  /* at the gate first: its first try's lease node is gone by then (its
   * delete went before the gate's create) */
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(gate, 1, T_WAIT), 1);
  CU_ASSERT_EQUAL_FATAL(zkt_wait_children(leases, 2, T_WAIT), 2);
  CU_ASSERT_FATAL(other_child(leases, node, waiting, sizeof waiting));
  CU_ASSERT_EQUAL(run_question(revoke, out, sizeof out, err, sizeof err), 0);
  snprintf(want, sizeof want, "%s\n", node);
  CU_ASSERT_STRING_EQUAL(out, want);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 10");
  /* the waiter's node: still its owner description, with its pid */
  CU_ASSERT_EQUAL(zoo_get(zkt_observer(), waiting, 0, data, &len, NULL), ZOK);
  data[len > 0 ? len : 0] = '\0';
  snprintf(want, sizeof want, "\npid=%ld\n", (long)b.pid);
  CU_ASSERT(strstr(data, want) != NULL);
  CU_ASSERT(strstr(data, "limit=1\n") != NULL);
  go(&a);
  CU_ASSERT(read_line(a.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end");
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  /* the waiter got nothing: its first report is its start */
  CU_ASSERT(command_started_at(&b, &token, node, sizeof node));
  go(&b);
  CU_ASSERT(read_line(b.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "end");
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  assert_empty(leases);
  snprintf(line, sizeof line, "/locks/%s/locks", name);
  assert_empty(line);
}

/* Reads zklock's stderr until both its waiting line (starting with status)
 * and its -v queued line have come: how many ahead each says. */
static bool status_and_queued(int fd, const char *status, int *status_ahead,
                              int *queued_ahead) {
  int64_t deadline = zkt_now_ms() + T_WAIT;
  char line[2048];
  const char *at;
  *status_ahead = *queued_ahead = -1;
  while (*status_ahead < 0 || *queued_ahead < 0) {
    int left = (int)(deadline - zkt_now_ms());
    if (left <= 0 || read_line(fd, line, sizeof line, left) <= 0)
      return false;
    if (strncmp(line, status, strlen(status)) == 0 &&
        (at = strstr(line + strlen(status), ": ")) != NULL)
      sscanf(at + 2, "%d ahead", status_ahead);
    else if ((at = strstr(line, " queued for /locks/")) != NULL &&
             (at = strstr(at, ": ")) != NULL)
      sscanf(at + 2, "%d ahead", queued_ahead);
  }
  return true;
}

/* A semaphore's contenders: their waiting lines and their -v queued events
 * count the same. Waiting for a lease, the leases ahead of its own; at the
 * gate, the contenders queued there ahead of it. */
static void test_semaphore_counts_agree(void) {
  char name[64], leases[160], gate[160], node[256], status[256];
  long long token;
  zkt_holder h[2];
  proc p, q;
  int i, in_status, in_event;
  zkt_name(name, sizeof name, "semcount");
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  snprintf(gate, sizeof gate, "/locks/%s/locks", name);
  for (i = 0; i < 2; i++)
    hold_lease(&h[i], name, 2);
  snprintf(status, sizeof status, "zklock: waiting for a lease of /locks/%s",
           name);
  spawn(&p, "-s", zkt_hosts(), "-v", "--limit", "2", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT(status_and_queued(p.err, status, &in_status, &in_event));
  CU_ASSERT_EQUAL(in_status, 2);
  CU_ASSERT_EQUAL(in_event, 2);
  CU_ASSERT_EQUAL(zkt_children(leases), 3);
  /* a second one queues at the gate, behind the first */
  spawn(&q, "-s", zkt_hosts(), "-v", "--limit", "2", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(gate, 2, T_WAIT), 2);
  CU_ASSERT(status_and_queued(q.err, status, &in_status, &in_event));
  CU_ASSERT_EQUAL(in_status, 1);
  CU_ASSERT_EQUAL(in_event, 1);
  zkt_unhold(&h[0]);
  CU_ASSERT(command_started_at(&p, &token, node, sizeof node));
  zkt_unhold(&h[1]);
  CU_ASSERT(command_started_at(&q, &token, node, sizeof node));
  go(&p);
  go(&q);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT_EQUAL(wait_exit(&q, T_WAIT), 0);
  cleanup(&p);
  cleanup(&q);
  assert_empty(leases);
  assert_empty(gate);
}

/* Four hold leases of a semaphore of 4, as an older libzklock wrote them
 * (the limit in the node's data only, not in its name: its names would
 * have the contender refused, test_cli_kinds); a contender that gives 2
 * waits, and its waiting line counts four holders: each lease by its own
 * limit, not by the watcher's. */
static void test_semaphore_holders_by_their_limit(void) {
  char name[64], leases[160], line[1024], node[256], held[4][256];
  static const char data[] = "host=old\npid=1\nstart=1\nlimit=4\n";
  long long token;
  proc p;
  int i, rc;
  zkt_name(name, sizeof name, "semmore");
  rc = zoo_create(zkt_observer(), "/locks", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0,
                  NULL, 0);
  CU_ASSERT(rc == ZOK || rc == ZNODEEXISTS);
  snprintf(line, sizeof line, "/locks/%s", name);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), line, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0),
                  ZOK);
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  CU_ASSERT_EQUAL(zoo_create(zkt_observer(), leases, NULL, -1,
                             &ZOO_OPEN_ACL_UNSAFE, ZOO_CONTAINER, NULL, 0),
                  ZOK);
  snprintf(line, sizeof line, "%s/_c_0011223344556677-lease-", leases);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL_FATAL(zoo_create(zkt_observer(), line, data,
                                     (int)strlen(data), &ZOO_OPEN_ACL_UNSAFE,
                                     ZOO_EPHEMERAL_SEQUENTIAL, held[i],
                                     sizeof held[i]),
                          ZOK);
  spawn(&p, "-s", zkt_hosts(), "-v", "--limit", "2", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 5, T_WAIT), 5);
  CU_ASSERT(read_status(p.err, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT(status_is(line, "waiting for a lease of", name, 4, "held"));
  CU_ASSERT(strstr(line, " and 3 more") != NULL);
  for (i = 0; i < 4; i++)
    CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), held[i], -1), ZOK);
  CU_ASSERT(command_started_at(&p, &token, node, sizeof node));
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  cleanup(&p);
  assert_empty(leases);
  snprintf(line, sizeof line, "/locks/%s/locks", name);
  assert_empty(line);
}

/* --list shows every kind, in a last column: readers and a writer of a
 * read/write lock; a semaphore's lease holders and its queue at the gate. */
static void test_list_kinds(void) {
  char name[64], parent[128], leases[160], line[1024], node[256], out[4096],
      *f[4][9];
  long long token;
  proc a, b, c;
  zkt_name(name, sizeof name, "kinds");
  zkt_parent(parent, sizeof parent, name);
  spawn(&a, "-s", zkt_hosts(), "--read", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  spawn(&b, "-s", zkt_hosts(), "-q", "--write", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(parent, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(list(name, out, sizeof out, f, 4), 2);
  CU_ASSERT_STRING_EQUAL(f[0][0], "0");
  CU_ASSERT_STRING_EQUAL(f[0][1], node);
  CU_ASSERT_STRING_EQUAL(f[0][8], "read");
  CU_ASSERT_EQUAL(strtol(f[0][4], NULL, 10), (long)a.pid);
  CU_ASSERT_STRING_EQUAL(f[1][8], "write");
  CU_ASSERT_EQUAL(strtol(f[1][4], NULL, 10), (long)b.pid);
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started(&b, line, sizeof line));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  assert_no_node(name);

  /* a semaphore of 1: the holder's lease, the next one's lease node and
   * its gate node (it counts at the gate), the third at the gate */
  zkt_name(name, sizeof name, "kindsem");
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  spawn(&a, "-s", zkt_hosts(), "--limit", "1", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_FATAL(command_started_at(&a, &token, node, sizeof node));
  spawn(&b, "-s", zkt_hosts(), "-q", "--limit", "1", name, "--", HELPER("hold"),
        NULL);
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, T_WAIT), 2);
  spawn(&c, "-s", zkt_hosts(), "-q", "--limit", "1", name, "--", HELPER("hold"),
        NULL);
  snprintf(line, sizeof line, "/locks/%s/locks", name);
  CU_ASSERT_EQUAL(zkt_wait_children(line, 2, T_WAIT), 2);
  /* the next one's lease node, made behind the gate (the first tries'
   * nodes went before their gate nodes came) */
  CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, T_WAIT), 2);
  CU_ASSERT_EQUAL_FATAL(list(name, out, sizeof out, f, 4), 4);
  CU_ASSERT_STRING_EQUAL(f[0][1], node);
  CU_ASSERT_STRING_EQUAL(f[0][8], "lease");
  CU_ASSERT_EQUAL(strtol(f[0][4], NULL, 10), (long)a.pid);
  CU_ASSERT_STRING_EQUAL(f[1][8], "lease");
  CU_ASSERT_EQUAL(strtol(f[1][4], NULL, 10), (long)b.pid);
  CU_ASSERT_STRING_EQUAL(f[2][8], "gate");
  CU_ASSERT_EQUAL(strtol(f[2][4], NULL, 10), (long)b.pid);
  CU_ASSERT_STRING_EQUAL(f[3][8], "gate");
  CU_ASSERT_EQUAL(strtol(f[3][4], NULL, 10), (long)c.pid);
  CU_ASSERT(strstr(f[2][1], "/locks/") != NULL);
  CU_ASSERT_STRING_EQUAL(f[3][0], "3");
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  CU_ASSERT(command_started(&b, line, sizeof line));
  go(&b);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  CU_ASSERT(command_started(&c, line, sizeof line));
  go(&c);
  CU_ASSERT_EQUAL(wait_exit(&c, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  cleanup(&c);
  assert_empty(leases);
  snprintf(line, sizeof line, "/locks/%s/locks", name);
  assert_empty(line);
}

/* -v: queued (how many ahead, behind whom: the holder's host and pid and
 * its node), granted (after how long, the token the command got),
 * released (after how long); a timed-out wait; a loss and why. Each line
 * has its time. */
static void test_verbose_events(void) {
  char name[64], parent[128], msg[1024], want[1024], line[512], node[256],
      own[ZKL_PATH_MAX];
  long long token, got;
  zkt_holder h;
  proc p;
  zkt_name(name, sizeof name, "verbose");
  zkt_parent(parent, sizeof parent, name);
  zkt_hold(&h, name);
  CU_ASSERT_EQUAL_FATAL(zkl_lock_get_node_path(h.l, own, sizeof own), ZKL_OK);
  spawn(&p, "-s", zkt_hosts(), "-q", "-v", name, "--", HELPER("hold"), NULL);
  CU_ASSERT(expect_verbose(p.err, "queued for ", msg, sizeof msg));
  snprintf(want, sizeof want,
           "queued for /locks/%s: 1 ahead, behind %s:%ld (%s)", name,
           clit_hostname, (long)getpid(), strrchr(own, '/') + 1);
  CU_ASSERT_STRING_EQUAL(msg, want);
  zkt_unhold(&h);
  CU_ASSERT_FATAL(command_started_at(&p, &token, node, sizeof node));
  CU_ASSERT(expect_verbose(p.err, "granted ", msg, sizeof msg));
  snprintf(want, sizeof want, "granted /locks/%s after ", name);
  CU_ASSERT(strncmp(msg, want, strlen(want)) == 0);
  CU_ASSERT(strstr(msg, ", token ") != NULL &&
            sscanf(strstr(msg, ", token ") + 8, "%lld", &got) == 1 &&
            got == token);
  go(&p);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 0);
  CU_ASSERT(expect_verbose(p.err, "released ", msg, sizeof msg));
  snprintf(want, sizeof want, "released /locks/%s after holding it ", name);
  CU_ASSERT(strncmp(msg, want, strlen(want)) == 0);
  cleanup(&p);
  assert_no_node(name);

  /* timed out */
  zkt_hold(&h, name);
  spawn(&p, "-s", zkt_hosts(), "-q", "-v", "-w", "0.5", name, "--",
        HELPER("hold"), NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 1);
  CU_ASSERT(expect_verbose(p.err, "queued for ", msg, sizeof msg));
  CU_ASSERT(expect_verbose(p.err, "timed out ", msg, sizeof msg));
  snprintf(want, sizeof want, "timed out waiting for /locks/%s after ", name);
  CU_ASSERT(strncmp(msg, want, strlen(want)) == 0);
  cleanup(&p);
  zkt_unhold(&h);
  assert_no_node(name);

  /* lost, and why */
  spawn(&p, "-s", zkt_hosts(), "-v", name, "--", HELPER("hold"), NULL);
  CU_ASSERT_FATAL(command_started_at(&p, &token, node, sizeof node));
  CU_ASSERT_EQUAL(zoo_delete(zkt_observer(), node, -1), ZOK);
  CU_ASSERT(read_line(p.report, line, sizeof line, T_WAIT) > 0);
  CU_ASSERT_STRING_EQUAL(line, "sig 15");
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 4);
  CU_ASSERT(expect_verbose(p.err, "lost ", msg, sizeof msg));
  snprintf(want, sizeof want, "lost /locks/%s after holding it ", name);
  CU_ASSERT(strncmp(msg, want, strlen(want)) == 0);
  CU_ASSERT(strstr(msg, ": its node was deleted") != NULL);
  cleanup(&p);
  assert_no_node(name);
}

static const zkt_test tests[] = {
    {"--read commands overlap, --write excludes them", test_read_write},
    {"--shared and --exclusive are --read and --write", test_shared_exclusive},
    {"--limit 2 admits two commands and not three", test_limit},
    {"--elect runs the leader's command and hands over; --leader", test_elect},
    {"--elect: a leader that stops leading exits 4", test_elect_lost},
    {"--revoke reaches the holders' commands as --on-revoke's signal",
     test_revoke},
    {"--revoke asks a semaphore's holder, not its waiter",
     test_revoke_semaphore_waiter},
    {"a semaphore's waiting line and -v count the same",
     test_semaphore_counts_agree},
    {"a semaphore's holders by their own limit",
     test_semaphore_holders_by_their_limit},
    {"--list shows the kind of each node", test_list_kinds},
    {"-v prints the lock's events with their times", test_verbose_events},
    {NULL, NULL}};

int main(int argc, char **argv) {
  return clit_main(argc, argv, "cli_modes", tests);
}
