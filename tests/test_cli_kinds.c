/* SPDX-License-Identifier: Apache-2.0 */
/* test_cli_kinds.c - one name, one lock, through the zklock command: the
 * 25 ordered pairs of kinds (a plain zklock, --read, --write, --limit 1,
 * --elect) on one name, one running its command, the other trying with -n;
 * a refusal of another kind exits 5 and names the kind, even with a long
 * -w; and the names that are a semaphore's places are refused. See
 * clitest.h for how zklock and its command are run. */
#define _GNU_SOURCE 1
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"

enum { MUTEX, READ, WRITE, SEM, ELECT, KINDS };
static const char *const kind_names[KINDS] = {"mutex", "--read", "--write",
                                              "--limit 1", "--elect"};
/* the kind a refusal names, for a holder of each kind, and how to take it
 * (with its article: "an election") */
static const char *const named[KINDS] = {
    "a mutex", "a read lock", "a write lock", "a semaphore", "an election"};
static const char *const option[KINDS] = {
    "zklock without a kind option", "--read", "--write", "--limit", "--elect"};
static int family(int k) { return k <= WRITE ? 0 : k; }

/* zklock -s HOSTS [-n | -w 30] KIND NAME -- helper hold */
static void spawn_kind(proc *p, int kind, const char *name, bool try_once) {
  const char *args[16];
  int n = 0;
  args[n++] = "-s";
  args[n++] = zkt_hosts();
  args[n++] = try_once ? "-n" : "-w";
  if (!try_once)
    args[n++] = "30";
  switch (kind) {
  case READ:
    args[n++] = "--read";
    break;
  case WRITE:
    args[n++] = "--write";
    break;
  case SEM:
    args[n++] = "--limit";
    args[n++] = "1";
    break;
  case ELECT:
    args[n++] = "--elect";
    args[n++] = try_once ? "second" : "first";
    break;
  default:
    break;
  }
  args[n++] = name;
  args[n++] = "--";
  args[n++] = clit_self_exe;
  args[n++] = "--helper";
  args[n++] = "hold";
  args[n] = NULL;
  spawn_argv(p, NULL, args);
}

static void one_pair(int first, int second, bool try_once) {
  char name[64], line[1024], err[2048];
  proc a, b;
  int status, want;
  zkt_name(name, sizeof name, "cli-kinds");
  spawn_kind(&a, first, name, false);
  CU_ASSERT_FATAL(command_started(&a, line, sizeof line));
  spawn_kind(&b, second, name, try_once);
  if (family(first) != family(second))
    want = 5;
  else if (first == READ && second == READ)
    want = 0;
  else
    want = 1; /* busy: -n's default -E */
  if (want == 0) {
    zkt_check(command_started(&b, line, sizeof line),
              "%s runs, %s -n: its command did not start", kind_names[first],
              kind_names[second]);
    go(&b);
  }
  status = wait_exit(&b, T_WAIT);
  zkt_check(status == want, "%s runs, %s %s: exit %d (want %d)",
            kind_names[first], kind_names[second], try_once ? "-n" : "-w 30",
            status, want);
  if (want == 5) {
    char expect[256];
    int n = read_all(b.err, err, sizeof err, T_WAIT);
    snprintf(expect, sizeof expect,
             "it is the name of %s (%s), which %s cannot share\n", named[first],
             option[first], named[second]);
    zkt_check(n > 0 && strstr(err, expect) != NULL,
              "%s runs, %s refused: said \"%s\"", kind_names[first],
              kind_names[second], n > 0 ? err : "");
  }
  /* the first still runs: it was never told to end */
  CU_ASSERT(!a.reaped);
  go(&a);
  CU_ASSERT_EQUAL(wait_exit(&a, T_WAIT), 0);
  cleanup(&a);
  cleanup(&b);
  zkt_assert_no_contender(name);
}

static void test_pairs(void) {
  int first, second;
  for (first = 0; first < KINDS; first++)
    for (second = 0; second < KINDS; second++)
      one_pair(first, second, true);
}

/* A refusal does not wait for -w: it is no "busy". */
static void test_refused_with_a_wait(void) {
  one_pair(WRITE, SEM, false);
  one_pair(SEM, MUTEX, false);
  one_pair(ELECT, READ, false);
}

/* A semaphore's limit is the one its lease nodes say: with two --limit 2
 * holding, a --limit 3 (or 1) contender is refused at once, -n or with a
 * wait, exits 5 and names the limit in use, and leaves nothing behind; the
 * holders run on. */
static void test_semaphore_limit_refused(void) {
  char name[64], leases[160], line[1024], err[2048], want[256];
  static const char *const other[] = {"3", "1"};
  proc a[2], b;
  int i, j;
  zkt_name(name, sizeof name, "cli-limit");
  snprintf(leases, sizeof leases, "/locks/%s/leases", name);
  for (i = 0; i < 2; i++) {
    spawn(&a[i], "-s", zkt_hosts(), "--limit", "2", name, "--", HELPER("hold"),
          NULL);
    CU_ASSERT_FATAL(command_started(&a[i], line, sizeof line));
  }
  for (j = 0; j < 4; j++) {
    if (j % 2 == 0)
      spawn(&b, "-s", zkt_hosts(), "-n", "--limit", other[j / 2], name, "--",
            "echo", "third", NULL);
    else
      spawn(&b, "-s", zkt_hosts(), "-w", "30", "--limit", other[j / 2], name,
            "--", "echo", "third", NULL);
    CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 5);
    CU_ASSERT(read_all(b.err, err, sizeof err, T_WAIT) > 0);
    snprintf(want, sizeof want,
             "it is a semaphore of 2 leases (--limit 2), not %s", other[j / 2]);
    zkt_check(strstr(err, want) != NULL, "said \"%s\"", err);
    cleanup(&b);
    CU_ASSERT_EQUAL(zkt_wait_children(leases, 2, T_WAIT), 2);
  }
  for (i = 0; i < 2; i++) {
    CU_ASSERT(!a[i].reaped);
    go(&a[i]);
    CU_ASSERT_EQUAL(wait_exit(&a[i], T_WAIT), 0);
    cleanup(&a[i]);
  }
  /* nobody holds: any limit now */
  spawn(&b, "-s", zkt_hosts(), "-n", "--limit", "3", name, "--", "true", NULL);
  CU_ASSERT_EQUAL(wait_exit(&b, T_WAIT), 0);
  cleanup(&b);
  zkt_assert_no_contender(name);
}

static void test_semaphore_places_refused(void) {
  proc p;
  char err[1024];
  spawn(&p, "-s", zkt_hosts(), "-n", "orders/locks", "--", "true", NULL);
  CU_ASSERT_EQUAL(wait_exit(&p, T_WAIT), 2);
  CU_ASSERT(read_all(p.err, err, sizeof err, T_WAIT) > 0 &&
            strstr(err, "semaphore") != NULL);
  cleanup(&p);
}

int main(int argc, char **argv) {
  static const zkt_test tests[] = {
      {"the 25 pairs of kinds", test_pairs},
      {"another kind is refused without waiting", test_refused_with_a_wait},
      {"a semaphore of another limit is refused", test_semaphore_limit_refused},
      {"a semaphore's places are no names", test_semaphore_places_refused},
      {NULL, NULL}};
  return clit_main(argc, argv, "cli-kinds", tests);
}
