/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fault_checker.c - the fault suite's checker (tests/fault_check.c) on
 * planted logs, with no server: it must count each kind of violation the
 * suite looks for (overlaps, refused resources, token order, lost updates,
 * changed reads, stale grants, late accepts, unannounced losses, late
 * leases, over-counted leases), also among multi-locks of the mutex's
 * name (and count those apart), and count nothing in a clean history; and
 * judge the holder's work: a holder of a stopped agent granted over before
 * its work ended, a forked holder's helper writing after the kill, a busy
 * callback's holder told late, zklock runs whose command's grandchild
 * worked on after zklock let go. The fault suite (tests/test_fault_suite.c)
 * is only as good as its checker.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_check.h"
#include "zktest.h"

/* ------------------------------------------- the checker, on planted logs */

/* Runs the checker on planted files (name, text, ..., NULL) in a scratch
 * run directory (session 1000 ms: stuck above 13 s); per_lock may be NULL. */
static fc_result plant(fc_result *per_lock, const char *const *files) {
  char dir[] = "/tmp/zkl-check-XXXXXX", cmd[128], path[700];
  fc_result r;
  FILE *devnull = fopen("/dev/null", "w"), *f;
  int i;
  CU_ASSERT_FATAL(mkdtemp(dir) != NULL && devnull != NULL);
  for (i = 0; files[i]; i += 2) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs(files[i + 1], f);
    fclose(f);
  }
  CU_ASSERT_EQUAL(fc_check(dir, 1000, &r, per_lock,
                           getenv("ZKL_CHECK_VERBOSE") ? stdout : devnull),
                  0);
  fclose(devnull);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CU_ASSERT_EQUAL(system(cmd), 0);
  return r;
}

/* Two or three mutex contenders' planted logs. */
static fc_result planted3(const char *faults, const char *c1, const char *c2,
                          const char *c3, const char *history) {
  const char *files[] = {"faults.log", faults,    "c1-1.log", c1,
                         "c2-1.log",   c2,        "history",  history,
                         c3 ? "c3-1.log" : NULL,  c3,         NULL};
  return plant(NULL, files);
}

static fc_result planted(const char *faults, const char *c1, const char *c2,
                         const char *history) {
  return planted3(faults, c1, c2, NULL, history);
}

/* Three contenders of another kind: their logs and its history. */
static fc_result planted_kind(const char *history_name, const char *faults,
                              const char *c1, const char *c2, const char *c3,
                              const char *history) {
  const char *files[] = {"faults.log", faults,  "c1-1.log",   c1,
                         "c2-1.log",   c2,      "c3-1.log",   c3,
                         history_name, history, NULL};
  return plant(NULL, files);
}

#define SPAWNS "1 SPAWN 1 1 101\n2 SPAWN 2 1 102\n"

/* The checker is what makes the suite fail: it must see each kind of
 * violation, and must not see one in a clean history with a pause. */
static void test_checker(void) {
  fc_result r;
  /* clean: handoff 1 -> 2, then 1 paused in its section, refused, told */
  r = planted(SPAWNS "5000 PAUSE 1 101 30 2000 4000 40\n",
              "10 ACQ\n100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n"
              "210 REL 0\n220 ACQ\n1000 START 30\n4001 LOST 3 30\n"
              "4002 REJECT 30 40\n4003 END 30\n4004 REL -1006\n",
              "20 ACQ\n300 START 20\n350 ACCEPT 20 1 2\n400 END 20\n"
              "410 REL 0\n420 ACQ\n3000 START 40\n3100 ACCEPT 40 2 3\n"
              "3200 END 40\n3300 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 350\n40 2 3 2 102 3100\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.stuck, 0);
  CU_ASSERT_EQUAL(r.handoffs, 3);
  CU_ASSERT_EQUAL(r.pauses_proven, 1);
  /* overlap: 2 starts before 1 ends, nobody paused or told */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n210 REL 0\n",
              "190 START 20\n195 ACCEPT 20 1 2\n300 END 20\n310 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 195\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.violations, 1);
  /* ...but not when 1 had been told LOST before 2 began */
  r = planted(SPAWNS,
              "100 START 10\n150 LOST 3 10\n160 REJECT 10 20\n200 END 10\n"
              "210 REL -1006\n",
              "190 START 20\n195 ACCEPT 20 0 1\n300 END 20\n310 REL 0\n",
              "20 0 1 2 102 195\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  /* ...while two others overlapping after that notice still count */
  r = planted3(SPAWNS "3 SPAWN 3 1 103\n",
               "100 START 10\n150 LOST 3 10\n900 REJECT 10 30\n1000 END 10\n",
               "200 START 20\n210 ACCEPT 20 0 1\n300 END 20\n310 REL 0\n",
               "250 START 30\n260 ACCEPT 30 1 2\n350 END 30\n360 REL 0\n",
               "20 0 1 2 102 210\n30 1 2 3 103 260\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  /* lost update and token order in the history */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n",
              "300 START 9\n350 ACCEPT 9 0 1\n400 END 9\n",
              "10 0 1 1 101 150\n9 0 1 2 102 350\n");
  CU_ASSERT_EQUAL(r.lost_updates, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  /* stale grant: refused, not paused, never told */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n",
              "300 START 9\n350 REJECT 9 10\n400 END 9\n",
              "10 0 1 1 101 150\n");
  CU_ASSERT_EQUAL(r.stale_grants, 1);
  /* paused holder accepted after a newer token, and never told */
  r = planted(SPAWNS "5000 PAUSE 1 101 10 2000 4000 20\n",
              "100 START 10\n4001 ACCEPT 10 1 2\n4002 END 10\n",
              "3000 START 20\n3100 ACCEPT 20 0 1\n3200 END 20\n",
              "20 0 1 2 102 3100\n10 1 2 1 101 4001\n");
  CU_ASSERT_EQUAL(r.late_accepts, 1);
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  /* cut off: told only after the other was granted */
  r = planted(SPAWNS "9000 PARTITION 1 101 10 1000 8000 0 5000\n",
              "100 START 10\n5000 LOST 3 10\n6000 REJECT 10 20\n6001 END 10\n",
              "4000 START 20\n4100 ACCEPT 20 0 1\n4200 END 20\n4300 REL 0\n",
              "20 0 1 2 102 4100\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  /* stuck: 2 waits 20 s while the lock is free */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n200 END 10\n210 REL 0\n",
              "150 ACQ\n20000300 START 20\n20000350 ACCEPT 20 1 2\n"
              "20000400 END 20\n",
              "10 0 1 1 101 150\n20 1 2 2 102 20000350\n");
  CU_ASSERT_EQUAL(r.stuck, 1);
  CU_ASSERT_EQUAL(r.violations, 0);
  /* ...but a wait behind a holder is no stuck wait */
  r = planted(SPAWNS, "100 START 10\n150 ACCEPT 10 0 1\n20000000 END 10\n"
              "20000010 REL 0\n",
              "150 ACQ\n20000300 START 20\n20000350 ACCEPT 20 1 2\n"
              "20000400 END 20\n",
              "10 0 1 1 101 150\n20 1 2 2 102 20000350\n");
  CU_ASSERT_EQUAL(r.stuck, 1); /* 1 was silent inside its section */
  CU_ASSERT(r.longest_free_wait_us < 1000);
}

/* Multi-locks of the mutex's name take part in the mutex's checks, and
 * are counted apart, with the faults aimed at them. */
static void test_checker_multi(void) {
  fc_result r;
  /* clean: multi, plain, multi (killed holding); a multi-lock's and a
   * plain create's reply lost */
  r = planted3(SPAWNS "3 SPAWN 3 1 103\n500 KILL-HOLDER 3 103 30 1 multi\n"
                      "600 LOST-CREATE 1 101 1 1 14\n"
                      "700 LOST-CREATE 2 102 2 1 15\n",
               "10 ACQ m ab\n100 START 10 m\n150 ACCEPT 10 0 1\n200 END 10\n"
               "210 REL 0\n",
               "20 ACQ\n300 START 20\n350 ACCEPT 20 1 2\n360 END 20\n"
               "370 REL 0\n",
               "30 ACQ m ba\n400 START 30 m\n410 ACCEPT 30 2 3\n420 ARMED 30\n",
               "10 0 1 1 101 150\n20 1 2 2 102 350\n30 2 3 3 103 410\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.grants, 3);
  CU_ASSERT_EQUAL(r.multi_grants, 2);
  CU_ASSERT_EQUAL(r.on_multi[FC_KILL_HOLDER], 1);
  CU_ASSERT_EQUAL(r.kills_aimed, 1);
  CU_ASSERT_EQUAL(r.faults[FC_LOST_CREATE], 2);
  CU_ASSERT_EQUAL(r.on_multi[FC_LOST_CREATE], 1);
  /* a multi-lock holder beside a plain one: an overlap; its token below
   * the plain one's, accepted after it: token order; a multi-lock's waiter
   * killed */
  r = planted3(SPAWNS "3 SPAWN 3 1 103\n"
                      "900 KILL-WAITER 3 103 _c_x-lock-0000000007 1 multi\n",
               "100 START 10 m\n250 ACCEPT 10 1 2\n260 END 10\n270 REL 0\n",
               "190 START 20\n195 ACCEPT 20 0 1\n300 END 20\n310 REL 0\n",
               "800 ACQ m ab\n",
               "20 0 1 2 102 195\n10 1 2 1 101 250\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  CU_ASSERT_EQUAL(r.violations, 2);
  CU_ASSERT_EQUAL(r.multi_grants, 1);
  CU_ASSERT_EQUAL(r.on_multi[FC_KILL_WAITER], 1);
  CU_ASSERT_EQUAL(r.kills_aimed, 1);
}

#define SPAWNS_RW "1 SPAWN 1 1 101 rw\n2 SPAWN 2 1 102 rw\n3 SPAWN 3 1 103 rw\n"

/* The read/write lock: readers only with readers, writers alone; what the
 * resource fences, it fences. */
static void test_checker_rw(void) {
  fc_result r;
  /* clean: a writer, then two readers side by side */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "10 ACQ w\n100 START 10 w\n150 ACCEPT 10 0 1\n200 END 10\n"
                   "210 REL 0 10\n",
                   "220 ACQ r\n300 START 20 r\n400 ACCEPT 20 1 1\n"
                   "410 END 20\n420 REL 0 20\n",
                   "230 ACQ r\n320 START 30 r\n390 ACCEPT 30 1 1\n"
                   "395 END 30\n398 REL 0 30\n",
                   "W+ 10 0 1 101 110\nW 10 0 1 1 101 150\n"
                   "R+ 20 1 2 102 305\nR+ 30 1 3 103 325\n"
                   "R- 30 1 1 1 3 103 390\nR- 20 1 1 1 2 102 400\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.stuck, 0);
  CU_ASSERT_EQUAL(r.handoffs, 3);
  CU_ASSERT_EQUAL(r.writes, 1);
  CU_ASSERT_EQUAL(r.reads, 2);
  CU_ASSERT_EQUAL(r.readers_together, 1);
  CU_ASSERT_EQUAL(r.max_readers, 2);
  /* a reader beside a writer: by the clocks, in the resource's order, and
   * in what the reader saw */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "100 START 10 w\n300 ACCEPT 10 0 1\n310 END 10\n"
                   "320 REL 0 10\n",
                   "200 START 20 r\n400 ACCEPT 20 0 1\n410 END 20\n"
                   "420 REL 0 20\n",
                   "",
                   "W+ 10 0 1 101 110\nR+ 20 0 2 102 210\n"
                   "W 10 0 1 1 101 300\nR- 20 0 1 1 2 102 400\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.read_changed, 1);
  CU_ASSERT_EQUAL(r.violations, 3);
  /* a writer entering while a reader is in (its write lands after) */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "100 START 10 r\n400 ACCEPT 10 0 0\n410 END 10\n"
                   "420 REL 0 10\n",
                   "200 START 20 w\n450 ACCEPT 20 0 1\n460 END 20\n"
                   "470 REL 0 20\n",
                   "",
                   "R+ 10 0 1 101 110\nW+ 20 0 2 102 210\n"
                   "R- 10 0 0 1 1 101 400\nW 20 0 1 2 102 450\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.read_changed, 0);
  /* two writers: a lost update, out-of-order tokens */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "100 START 10 w\n300 ACCEPT 10 0 1\n310 END 10\n",
                   "200 START 9 w\n400 ACCEPT 9 0 1\n410 END 9\n", "",
                   "W+ 10 0 1 101 110\nW+ 9 0 2 102 210\n"
                   "W 10 0 1 1 101 300\nW 9 0 1 2 102 400\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.lost_updates, 1);
  CU_ASSERT_EQUAL(r.token_order, 1);
  /* a reader the fence refused, neither paused nor told: a stale grant */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "100 START 10 w\n150 ACCEPT 10 0 1\n200 END 10\n"
                   "210 REL 0 10\n",
                   "300 START 5 r\n310 REJECT 5 10\n320 END 5\n330 REL 0 5\n",
                   "", "W+ 10 0 1 101 110\nW 10 0 1 1 101 150\n");
  CU_ASSERT_EQUAL(r.stale_grants, 1);
  CU_ASSERT_EQUAL(r.violations, 1);
  /* a paused reader: told, its late read refused, the writer after it
   * excused from meeting it */
  r = planted_kind("rw-history",
                   SPAWNS_RW "5000 PAUSE 1 101 10 2000 4000 40 reader\n",
                   "100 START 10 r\n4001 LOST 3 10\n4002 REJECT 10 40\n"
                   "4003 END 10\n4004 REL -1006 10\n",
                   "3000 START 40 w\n3100 ACCEPT 40 0 1\n3200 END 40\n"
                   "3300 REL 0 40\n",
                   "",
                   "R+ 10 0 1 101 110\nW+ 40 0 2 102 3010\n"
                   "W 40 0 1 2 102 3100\nR- 10 0 1 0 1 101 4002\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.pauses_proven, 1);
  CU_ASSERT_EQUAL(r.on_readers[FC_PAUSE_HOLDER], 1);
  /* a reader cut off, told after a writer was granted: late */
  r = planted_kind("rw-history",
                   SPAWNS_RW "9000 PARTITION 1 101 10 1000 8000 0 5000\n",
                   "100 START 10 r\n5000 LOST 3 10\n6000 REJECT 10 20\n"
                   "6001 END 10\n",
                   "4000 START 20 w\n4100 ACCEPT 20 0 1\n4200 END 20\n"
                   "4300 REL 0 20\n",
                   "",
                   "R+ 10 0 1 101 110\nW+ 20 0 2 102 4010\n"
                   "W 20 0 1 2 102 4100\nR- 10 0 1 0 1 101 6000\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  /* ...but another reader granted meanwhile is no harm */
  r = planted_kind("rw-history",
                   SPAWNS_RW "9000 PARTITION 1 101 10 1000 8000 0 5000\n",
                   "100 START 10 r\n5000 LOST 3 10\n6000 ACCEPT 10 0 0\n"
                   "6001 END 10\n",
                   "4000 START 20 r\n4100 ACCEPT 20 0 0\n4200 END 20\n"
                   "4300 REL 0 20\n",
                   "",
                   "R+ 10 0 1 101 110\nR+ 20 0 2 102 4010\n"
                   "R- 20 0 0 1 2 102 4100\nR- 10 0 0 1 1 101 6000\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.partitions_told, 1);
  /* a downgrade: its read side begins inside its own write section */
  r = planted_kind("rw-history", SPAWNS_RW,
                   "100 START 10 w\n150 ACCEPT 10 0 1\n160 ACQ r\n"
                   "170 START 12 r\n180 END 10\n190 REL 0 10\n"
                   "250 ACCEPT 12 1 1\n260 END 12\n270 REL 0 12\n",
                   "300 START 20 w\n350 ACCEPT 20 1 2\n360 END 20\n"
                   "370 REL 0 20\n",
                   "",
                   "W+ 10 0 1 101 110\nW 10 0 1 1 101 150\n"
                   "R+ 12 1 1 101 200\nR- 12 1 1 1 1 101 250\n"
                   "W+ 20 1 2 102 310\nW 20 1 2 2 102 350\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.downgrades, 1);
}

#define SPAWNS_SEM                                                          \
  "1 SPAWN 1 1 101 sem:2\n2 SPAWN 2 1 102 sem:2\n3 SPAWN 3 1 103 sem:2\n"

/* The semaphore: at most N, and N reached. */
static void test_checker_sem(void) {
  fc_result r;
  /* clean: two at once, then a third after the first left */
  r = planted_kind("sem-history", SPAWNS_SEM,
                   "100 START 10\n110 ACCEPT 10 1 2\n300 END 10\n310 REL 0\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n400 END 20\n410 REL 0\n",
                   "350 START 30\n360 ACCEPT 30 2 2\n500 END 30\n510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\nS- 10 1 1 101 305\n"
                   "S+ 30 2 3 103 360\nS- 20 1 2 102 405\n"
                   "S- 30 0 3 103 505\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.handoffs, 3);
  CU_ASSERT_EQUAL(r.at_limit, 2);
  CU_ASSERT_EQUAL(r.max_held, 2);
  /* N + 1 holders */
  r = planted_kind("sem-history", SPAWNS_SEM,
                   "100 START 10\n110 ACCEPT 10 1 2\n300 END 10\n310 REL 0\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n400 END 20\n410 REL 0\n",
                   "250 START 30\n260 ACCEPT 30 3 2\n500 END 30\n510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\nS+ 30 3 3 103 260\n"
                   "S- 10 2 1 101 305\nS- 20 1 2 102 405\n"
                   "S- 30 0 3 103 505\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.violations, 2);
  /* a killed holder's registration is void once the resource dropped it */
  r = planted_kind("sem-history", SPAWNS_SEM "400 KILL-HOLDER 1 101 10 1\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n120 ARMED 10\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n2000 END 20\n2010 REL 0\n",
                   "1000 START 30\n1010 ACCEPT 30 2 2\n1500 END 30\n"
                   "1510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\nX 1 101 400\n"
                   "S+ 30 2 3 103 1010\nS- 30 1 3 103 1505\n"
                   "S- 20 0 2 102 2005\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.kills_aimed, 1);
  /* ...and is not, had it not */
  r = planted_kind("sem-history", SPAWNS_SEM "400 KILL-HOLDER 1 101 10 1\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n120 ARMED 10\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n2000 END 20\n2010 REL 0\n",
                   "1000 START 30\n1010 ACCEPT 30 2 2\n1500 END 30\n"
                   "1510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\n"
                   "S+ 30 2 3 103 1010\nS- 30 1 3 103 1505\n"
                   "S- 20 0 2 102 2005\n");
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  /* a paused holder: told, its lease taken meanwhile */
  r = planted_kind("sem-history", SPAWNS_SEM "5000 PAUSE 1 101 10 2000 4000 1\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n120 ARMED 10\n"
                   "4001 LOST 3 10\n4003 END 10\n4004 REL -1006\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n4500 END 20\n4510 REL 0\n",
                   "3000 START 30\n3010 ACCEPT 30 3 2\n3200 END 30\n"
                   "3210 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\n"
                   "S+ 30 3 3 103 3010\nS- 30 2 3 103 3205\n"
                   "S- 10 1 1 101 4002\nS- 20 0 2 102 4505\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.pauses_proven, 1);
  /* ...never told */
  r = planted_kind("sem-history", SPAWNS_SEM "5000 PAUSE 1 101 10 2000 4000 1\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n120 ARMED 10\n"
                   "4003 END 10\n4004 REL 0\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n4500 END 20\n4510 REL 0\n",
                   "3000 START 30\n3010 ACCEPT 30 3 2\n3200 END 30\n"
                   "3210 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\n"
                   "S+ 30 3 3 103 3010\nS- 30 2 3 103 3205\n"
                   "S- 10 1 1 101 4002\nS- 20 0 2 102 4505\n");
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.pauses_proven, 0);
}

/* Holders pinned to a server cut off inside the ensemble (ENSEMBLE-CUT):
 * judged as cut-off holders (told before anyone else is granted what
 * excludes them), counted by kind of fault, by the server's role and by
 * the link's shape; one never told whose lock went to nobody else kept
 * it, which is no violation. */
static void test_checker_ensemble(void) {
  fc_result r;
  /* a follower isolated: told at 2500, the next holder granted at 4000 */
  r = planted(SPAWNS "9000 ENSEMBLE-CUT 1 101 10 1000 8000 2500 2 follower "
                     "isolate holder\n",
              "100 START 10\n150 ACCEPT 10 0 1\n2500 LOST 3 10\n"
              "6000 REJECT 10 20\n6001 END 10\n",
              "4000 START 20\n4100 ACCEPT 20 1 2\n4200 END 20\n4300 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 4100\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.faults[FC_SERVER_CUT], 1);
  CU_ASSERT_EQUAL(r.faults[FC_PARTITION], 0);
  CU_ASSERT_EQUAL(r.told_first[FC_SERVER_CUT], 1);
  CU_ASSERT_EQUAL(r.on_leader[FC_SERVER_CUT], 0);
  CU_ASSERT_EQUAL(r.margins[FC_SERVER_CUT], 1);
  CU_ASSERT_EQUAL(r.margin_min_us[FC_SERVER_CUT], 1500);
  /* the leader cut off into a minority: told only after the next grant */
  r = planted(SPAWNS "9000 ENSEMBLE-CUT 1 101 10 1000 8000 5000 1 leader "
                     "isolate multi\n",
              "100 START 10 m\n5000 LOST 3 10\n6000 REJECT 10 20\n"
              "6001 END 10\n",
              "4000 START 20\n4100 ACCEPT 20 0 1\n4200 END 20\n4300 REL 0\n",
              "20 0 1 2 102 4100\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.violations, 2);
  CU_ASSERT_EQUAL(r.on_leader[FC_SERVER_CUT], 1);
  CU_ASSERT_EQUAL(r.on_multi[FC_SERVER_CUT], 1);
  CU_ASSERT_EQUAL(r.told_first[FC_SERVER_CUT], 0);
  /* a flapping link: never told, and the lock went to another */
  r = planted(SPAWNS "9000 ENSEMBLE-CUT 1 101 10 1000 8000 0 3 follower "
                     "flap holder\n",
              "100 START 10\n6000 REJECT 10 20\n6001 END 10\n",
              "4000 START 20\n4100 ACCEPT 20 0 1\n4200 END 20\n4300 REL 0\n",
              "20 0 1 2 102 4100\n");
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.faults[FC_LEADER_LINK], 1);
  CU_ASSERT_EQUAL(r.link_shapes[FC_FLAP], 1);
  /* ...never told, and nobody else granted during its section: it kept
   * its lock (its server got through in time) */
  r = planted(SPAWNS "9000 ENSEMBLE-CUT 1 101 10 1000 8000 0 3 follower "
                     "flap holder\n",
              "100 START 10\n150 ACCEPT 10 0 1\n7000 END 10\n7010 REL 0\n",
              "8000 START 20\n8100 ACCEPT 20 1 2\n8200 END 20\n8300 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 8100\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.kept_lock[FC_LEADER_LINK], 1);
  CU_ASSERT_EQUAL(r.told_first[FC_LEADER_LINK], 0);
  /* a cut-off holder (PARTITION) never told is a violation even so: cut
   * off from every server, its session surely expired */
  r = planted(SPAWNS "9000 PARTITION 1 101 10 1000 8000 0 0\n",
              "100 START 10\n150 ACCEPT 10 0 1\n7000 END 10\n7010 REL 0\n",
              "8000 START 20\n8100 ACCEPT 20 1 2\n8200 END 20\n8300 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 8100\n");
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.kept_lock[FC_PARTITION], 0);
  /* a reader on a follower whose packets to the leader are dropped: a
   * reader granted meanwhile is no harm, the writer after the notice is
   * the next grant */
  r = planted_kind("rw-history",
                   SPAWNS_RW "9000 ENSEMBLE-CUT 1 101 10 1000 8000 3000 2 "
                             "follower oneway-out reader\n",
                   "100 START 10 r\n3000 LOST 3 10\n6000 REJECT 10 20\n"
                   "6001 END 10\n",
                   "2000 START 15 r\n2100 ACCEPT 15 0 0\n2200 END 15\n"
                   "2300 REL 0 15\n",
                   "4500 START 20 w\n4600 ACCEPT 20 0 1\n4700 END 20\n"
                   "4800 REL 0 20\n",
                   "R+ 10 0 1 101 110\nR+ 15 0 2 102 2010\n"
                   "R- 15 0 0 1 2 102 2100\nW+ 20 0 3 103 4510\n"
                   "W 20 0 1 3 103 4600\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.told_first[FC_LEADER_LINK], 1);
  CU_ASSERT_EQUAL(r.link_shapes[FC_ONEWAY_OUT], 1);
  CU_ASSERT_EQUAL(r.on_readers[FC_LEADER_LINK], 1);
  CU_ASSERT_EQUAL(r.margin_min_us[FC_LEADER_LINK], 1500);
  /* ...and a writer granted before the notice is late */
  r = planted_kind("rw-history",
                   SPAWNS_RW "9000 ENSEMBLE-CUT 1 101 10 1000 8000 5000 2 "
                             "follower oneway-in reader\n",
                   "100 START 10 r\n5000 LOST 3 10\n6000 REJECT 10 20\n"
                   "6001 END 10\n",
                   "",
                   "4000 START 20 w\n4100 ACCEPT 20 0 1\n4200 END 20\n"
                   "4300 REL 0 20\n",
                   "R+ 10 0 1 101 110\nW+ 20 0 3 103 4010\n"
                   "W 20 0 1 3 103 4100\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  CU_ASSERT_EQUAL(r.link_shapes[FC_ONEWAY_IN], 1);
  /* a semaphore holder told after two others held at once beside it */
  r = planted_kind("sem-history",
                   SPAWNS_SEM "9000 ENSEMBLE-CUT 1 101 10 1000 8000 5000 2 "
                              "follower isolate holder\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n5000 LOST 3 10\n"
                   "6001 END 10\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n7000 END 20\n7010 REL 0\n",
                   "4000 START 30\n4010 ACCEPT 30 2 2\n4500 END 30\n"
                   "4510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\n"
                   "S+ 30 2 3 103 4010\nS- 30 1 3 103 4505\n"
                   "S- 20 0 2 102 7005\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  CU_ASSERT_EQUAL(r.faults[FC_SERVER_CUT], 1);
}

/* The holder's work (issue 33). A holder of a stopped agent (AGENT-STOP)
 * holds until its END, told or not: anyone granted what excludes it
 * between its notice and its END is "work late", where a plain told
 * holder would be excused; it must be told. A forked holder's helper is
 * the holder: its lines after the kill extend the section; through an
 * agent the lock must pass within a session timeout of the kill. A busy
 * callback's holder is judged as a cut-off one, by notices before its END
 * only. */
static void test_checker_work(void) {
  fc_result r, per[FC_LOCKS];
  const char *stop_victim =
      "100 START 10\n120 ARMED 10\n1010 LOST 6 10\n1150 HALT 10\n"
      "1200 REJECT 10 20\n1201 END 10\n1210 REL -1006\n";
  const char *early = "500 ACQ\n1100 START 20\n1150 ACCEPT 20 0 1\n"
                      "1160 END 20\n1170 REL 0\n";
  /* clean: told (ZKL_LOST_AGENT) at 1010, its work ends at 1201, the next
   * holder is granted at 1300 */
  r = planted(SPAWNS "2000 AGENT-STOP 1 101 10 1000 1900 A holder\n",
              "100 START 10\n120 ARMED 10\n1010 LOST 6 10\n1150 HALT 10\n"
              "1200 ACCEPT 10 0 1\n1201 END 10\n1210 REL 0\n",
              "500 ACQ\n1300 START 20\n1350 ACCEPT 20 1 2\n1400 END 20\n"
              "1410 REL 0\n",
              "10 0 1 1 101 1200\n20 1 2 2 102 1350\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.faults[FC_AGENT_STOP], 1);
  CU_ASSERT_EQUAL(r.told_first[FC_AGENT_STOP], 1);
  CU_ASSERT_EQUAL(r.stop_told_agent, 1);
  CU_ASSERT_EQUAL(r.margins[FC_AGENT_STOP], 1);
  CU_ASSERT_EQUAL(r.margin_min_us[FC_AGENT_STOP], 99); /* from its END */
  /* the next holder granted after the notice, before its END: work late
   * (an old agent's stop deleted the node at once) */
  r = planted(SPAWNS "2000 AGENT-STOP 1 101 10 1000 1900 A holder\n",
              stop_victim, early, "20 0 1 2 102 1150\n");
  CU_ASSERT_EQUAL(r.work_late, 1);
  CU_ASSERT_EQUAL(r.overlaps, 0);
  CU_ASSERT_EQUAL(r.violations, 1);
  CU_ASSERT_EQUAL(r.told_first[FC_AGENT_STOP], 0);
  /* ...which a holder told by any other fault is excused for */
  r = planted(SPAWNS, stop_victim, early, "20 0 1 2 102 1150\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  /* never told: unannounced, even with nobody granted meanwhile */
  r = planted(SPAWNS "2000 AGENT-STOP 1 101 10 1000 1900 A holder\n",
              "100 START 10\n120 ARMED 10\n1200 ACCEPT 10 0 1\n"
              "1201 END 10\n1210 REL 0\n",
              "500 ACQ\n1300 START 20\n1350 ACCEPT 20 1 2\n1400 END 20\n"
              "1410 REL 0\n",
              "10 0 1 1 101 1200\n20 1 2 2 102 1350\n");
  CU_ASSERT_EQUAL(r.unannounced, 1);
  /* told by its lease, not by the stop: in time, but not the stop's word */
  r = planted(SPAWNS "2000 AGENT-STOP 1 101 10 1000 1900 A holder\n",
              "100 START 10\n120 ARMED 10\n1010 LOST 3 10\n"
              "1200 ACCEPT 10 0 1\n1201 END 10\n1210 REL 0\n",
              "500 ACQ\n1300 START 20\n1350 ACCEPT 20 1 2\n1400 END 20\n"
              "1410 REL 0\n",
              "10 0 1 1 101 1200\n20 1 2 2 102 1350\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.told_first[FC_AGENT_STOP], 1);
  CU_ASSERT_EQUAL(r.stop_told_agent, 0);
  /* a semaphore's stopped holder still at work when a third lease is
   * granted: by the clocks and in the resource */
  r = planted_kind("sem-history",
                   SPAWNS_SEM "2000 AGENT-STOP 1 101 10 1000 1900 A holder\n",
                   "100 START 10\n110 ACCEPT 10 1 2\n1010 LOST 6 10\n"
                   "1200 END 10\n1210 REL 0\n",
                   "200 START 20\n210 ACCEPT 20 2 2\n3000 END 20\n"
                   "3010 REL 0\n",
                   "1100 START 30\n1110 ACCEPT 30 3 2\n1500 END 30\n"
                   "1510 REL 0\n",
                   "S+ 10 1 1 101 110\nS+ 20 2 2 102 210\n"
                   "S+ 30 3 3 103 1110\nS- 10 2 1 101 1200\n"
                   "S- 30 1 3 103 1505\nS- 20 0 2 102 3005\n");
  CU_ASSERT_EQUAL(r.work_late, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.violations, 2);
  /* a read/write lock's stopped reader still in when a writer enters */
  r = planted_kind("rw-history",
                   SPAWNS_RW "2000 AGENT-STOP 1 101 10 1000 1900 A reader\n",
                   "100 START 10 r\n1010 LOST 6 10\n1200 REJECT 10 20\n"
                   "1201 END 10\n1210 REL -1006 10\n",
                   "",
                   "1100 START 20 w\n1150 ACCEPT 20 0 1\n1160 END 20\n"
                   "1170 REL 0 20\n",
                   "R+ 10 0 1 101 110\nW+ 20 0 3 103 1110\n"
                   "W 20 0 1 3 103 1150\nR- 10 0 1 0 1 101 1200\n");
  CU_ASSERT_EQUAL(r.work_late, 1);
  CU_ASSERT_EQUAL(r.resource_overlaps, 1);
  CU_ASSERT_EQUAL(r.on_readers[FC_AGENT_STOP], 1);

  /* a forked holder killed at 2990 (reaped at 3000), direct: its lock
   * passes at its session's expiry, 3 s later here (a session of 1 s in
   * these plants: a direct one is never late) */
  r = planted(SPAWNS "3000 FORK-KILL 1 101 10 2990 - holder\n",
              "100 START 10\n110 WORKER 111 0\n120 ARMED 10\n",
              "500 ACQ\n3002990 START 20\n3003000 ACCEPT 20 0 1\n"
              "3003100 END 20\n3003200 REL 0\n",
              "20 0 1 2 102 3003000\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.faults[FC_FORK_KILL], 1);
  CU_ASSERT_EQUAL(r.via_agent[FC_FORK_KILL], 0);
  CU_ASSERT_EQUAL(r.kill_handoffs[0], 1);
  CU_ASSERT_EQUAL(r.kill_handoff_min_us[0], 3000000);
  CU_ASSERT_EQUAL(r.late_handoffs, 0);
  /* ...through an agent, the same is late: past the session timeout */
  r = planted(SPAWNS "3000 FORK-KILL 1 101 10 2990 A holder\n",
              "100 START 10\n110 WORKER 111 0\n120 ARMED 10\n",
              "500 ACQ\n3002990 START 20\n3003000 ACCEPT 20 0 1\n"
              "3003100 END 20\n3003200 REL 0\n",
              "20 0 1 2 102 3003000\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.via_agent[FC_FORK_KILL], 1);
  CU_ASSERT_EQUAL(r.kill_handoffs[1], 1);
  CU_ASSERT_EQUAL(r.late_handoffs, 1);
  /* ...and at once is not; but a helper that wrote after the kill was
   * still the holder: the next holder overlapped it (and the helper's
   * write was refused, never told) */
  r = planted(SPAWNS "3000 FORK-KILL 1 101 10 2990 A holder\n",
              "100 START 10\n110 WORKER 111 0\n120 ARMED 10\n",
              "500 ACQ\n3100 START 20\n3150 ACCEPT 20 0 1\n3200 END 20\n"
              "3210 REL 0\n",
              "20 0 1 2 102 3150\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.late_handoffs, 0);
  CU_ASSERT_EQUAL(r.kill_handoff_min_us[1], 110);
  r = planted(SPAWNS "3000 FORK-KILL 1 101 10 2990 A holder\n",
              "100 START 10\n110 WORKER 111 0\n120 ARMED 10\n"
              "3500 REJECT 10 20\n",
              "500 ACQ\n3100 START 20\n3150 ACCEPT 20 0 1\n3200 END 20\n"
              "3210 REL 0\n",
              "20 0 1 2 102 3150\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.stale_grants, 1);
  /* a rw writer killed at 1000 with its helper at work, through an agent:
   * a reader granted at 1050, before the driver's line (1100) and its X
   * in the resource, is no overlap: the holder was dead from the kill */
  r = planted_kind("rw-history",
                   SPAWNS_RW "1100 FORK-KILL 1 101 10 1000 A writer\n",
                   "100 START 10 w\n110 WORKER 111 0\n120 ARMED 10\n",
                   "1050 START 20 r\n1060 ACCEPT 20 0 0\n1070 END 20\n"
                   "1080 REL 0 20\n",
                   "",
                   "W+ 10 0 1 101 120\nR+ 20 0 2 102 1055\n"
                   "R- 20 0 0 1 2 102 1060\nX 1 101 1100\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.on_readers[FC_FORK_KILL], 0);

  /* a busy callback, direct: told by its lease at 2500, its work ended,
   * the next holder granted at 3000 */
  r = planted(SPAWNS "9000 BUSY 1 101 10 1000 2700 - holder\n",
              "100 START 10\n120 ARMED 10\n130 BUSY 0\n2500 LOST 3 10\n"
              "2600 HALT 10\n2610 ACCEPT 10 0 1\n2620 END 10\n"
              "4000 UNBUSY\n4010 REL -1006\n",
              "500 ACQ\n3000 START 20\n3050 ACCEPT 20 1 2\n3100 END 20\n"
              "3110 REL 0\n",
              "10 0 1 1 101 2610\n20 1 2 2 102 3050\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.faults[FC_BUSY], 1);
  CU_ASSERT_EQUAL(r.told_first[FC_BUSY], 1);
  CU_ASSERT_EQUAL(r.margin_min_us[FC_BUSY], 500);
  /* ...told only after the next grant: late */
  r = planted(SPAWNS "9000 BUSY 1 101 10 1000 2700 - holder\n",
              "100 START 10\n120 ARMED 10\n130 BUSY 0\n2500 LOST 3 10\n"
              "2600 HALT 10\n2610 REJECT 10 20\n2620 END 10\n"
              "4000 UNBUSY\n4010 REL -1006\n",
              "500 ACQ\n2000 START 20\n2050 ACCEPT 20 0 1\n2100 END 20\n"
              "2110 REL 0\n",
              "20 0 1 2 102 2050\n");
  CU_ASSERT_EQUAL(r.lease_late, 1);
  /* through an agent: kept its hold, nobody granted meanwhile; a notice
   * after its END (another fault's) is not this one's */
  r = plant(per, (const char *const[]){
                     "faults.log", SPAWNS "9000 BUSY 1 101 10 1000 5000 A "
                                          "holder\n",
                     "c1-1.log",
                     "100 START 10\n120 ARMED 10\n130 BUSY 0\n4000 UNBUSY\n"
                     "4900 ACCEPT 10 0 1\n4950 END 10\n4960 REL 0\n"
                     "6000 ACQ\n6100 START 30\n6150 LOST 6 30\n"
                     "6200 END 30\n6210 REL -1006\n",
                     "c2-1.log",
                     "500 ACQ\n5100 START 20\n5150 ACCEPT 20 1 2\n"
                     "5200 END 20\n5210 REL 0\n",
                     "history", "10 0 1 1 101 4900\n20 1 2 2 102 5150\n",
                     NULL});
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.kept_lock[FC_BUSY], 1);
  CU_ASSERT_EQUAL(r.via_agent[FC_BUSY], 1);
  CU_ASSERT_EQUAL(r.told_via_agent[FC_BUSY], 0);
  CU_ASSERT_EQUAL(per[FC_MUTEX].kept_lock[FC_BUSY], 1);
}

/* Contenders that lock with the zklock command (SPAWN's mode "zklock"):
 * every hold is under the work rule, and a line of its token after its
 * REL (a command's grandchild's) extends it; the REL itself, the loop's,
 * written after zklock exited, does not. A ZKLOCK-LOSS victim must be
 * told; a ZKLOCK-KILL's handoff is measured as a fork kill's. (The checker
 * before these refused the mode: "unknown lock kind".) */
#define SPAWNS_ZK "1 SPAWN 1 1 101 zklock\n2 SPAWN 2 1 102\n"
static void test_checker_zklock(void) {
  fc_result r;
  const char *next = "150 ACQ\n300 START 20\n350 ACCEPT 20 0 1\n"
                     "360 END 20\n370 REL 0\n";
  /* clean: a zklock run, then a library contender */
  r = planted(SPAWNS_ZK,
              "10 ACQ\n100 START 10\n110 ARMED 10\n150 ACCEPT 10 0 1\n"
              "160 END 10\n200 REL 0\n210 ACQ\n",
              "150 ACQ\n300 START 20\n350 ACCEPT 20 1 2\n360 END 20\n"
              "370 REL 0\n",
              "10 0 1 1 101 150\n20 1 2 2 102 350\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.zklock_grants, 1);
  CU_ASSERT_EQUAL(r.stuck, 0);
  /* zklock let go (REL at 200) while its command's grandchild worked on:
   * its write at 500, refused, is that hold's, which overlapped the next */
  r = planted(SPAWNS_ZK,
              "10 ACQ\n100 START 10\n110 ARMED 10\n200 REL 0\n210 ACQ\n"
              "500 REJECT 10 20\n510 END 10\n",
              next, "20 0 1 2 102 350\n");
  CU_ASSERT_EQUAL(r.overlaps, 1);
  CU_ASSERT_EQUAL(r.stale_grants, 1);
  /* ...told (SIGTERM) first: work late */
  r = planted(SPAWNS_ZK,
              "10 ACQ\n100 START 10\n110 ARMED 10\n200 REL 0\n210 ACQ\n"
              "250 LOST 0 10\n500 REJECT 10 20\n510 END 10\n",
              next, "20 0 1 2 102 350\n");
  CU_ASSERT_EQUAL(r.work_late, 1);
  CU_ASSERT_EQUAL(r.overlaps, 0);
  /* a grandchild SIGKILLed by the keeper says nothing more: the hold's
   * work ended at its last line, not at the loop's REL written after the
   * release (the next grant came between the two) */
  r = planted(SPAWNS_ZK,
              "10 ACQ\n100 START 10\n110 ARMED 10\n120 LOST 0 10\n"
              "1300 REL 4\n1310 ACQ\n",
              "150 ACQ\n1290 START 20\n1350 ACCEPT 20 0 1\n1360 END 20\n"
              "1370 REL 0\n",
              "20 0 1 2 102 1350\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  /* a loss its grandchild was never told of: unannounced */
  r = planted(SPAWNS_ZK "2000 ZKLOCK-LOSS 1 101 10 1000 1900 - zklock\n",
              "10 ACQ\n100 START 10\n110 ARMED 10\n1950 REL 4\n1960 ACQ\n",
              "150 ACQ\n2000 START 20\n2050 ACCEPT 20 0 1\n2060 END 20\n"
              "2070 REL 0\n",
              "20 0 1 2 102 2050\n");
  CU_ASSERT_EQUAL(r.unannounced, 1);
  CU_ASSERT_EQUAL(r.faults[FC_ZKLOCK_LOSS], 1);
  /* ...told: in time */
  r = planted(SPAWNS_ZK "2000 ZKLOCK-LOSS 1 101 10 1000 1900 A zklock\n",
              "10 ACQ\n100 START 10\n110 ARMED 10\n1100 LOST 0 10\n"
              "1950 REL 4\n1960 ACQ\n",
              "150 ACQ\n2000 START 20\n2050 ACCEPT 20 0 1\n2060 END 20\n"
              "2070 REL 0\n",
              "20 0 1 2 102 2050\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.told_first[FC_ZKLOCK_LOSS], 1);
  CU_ASSERT_EQUAL(r.via_agent[FC_ZKLOCK_LOSS], 1);
  /* zklock SIGKILLed through an agent, the lock passing past the session
   * timeout: late; direct, not */
  r = planted(SPAWNS_ZK "3000 ZKLOCK-KILL 1 101 10 2990 A zklock 555\n",
              "10 ACQ\n100 START 10\n110 ARMED 10\n2995 REL 137\n",
              "500 ACQ\n3002990 START 20\n3003000 ACCEPT 20 0 1\n"
              "3003100 END 20\n3003200 REL 0\n",
              "20 0 1 2 102 3003000\n");
  CU_ASSERT_EQUAL(r.violations, 0);
  CU_ASSERT_EQUAL(r.faults[FC_ZKLOCK_KILL], 1);
  CU_ASSERT_EQUAL(r.late_handoffs, 1);
  r = planted(SPAWNS_ZK "3000 ZKLOCK-KILL 1 101 10 2990 - zklock 555\n",
              "10 ACQ\n100 START 10\n110 ARMED 10\n2995 REL 137\n",
              "500 ACQ\n3002990 START 20\n3003000 ACCEPT 20 0 1\n"
              "3003100 END 20\n3003200 REL 0\n",
              "20 0 1 2 102 3003000\n");
  CU_ASSERT_EQUAL(r.late_handoffs, 0);
  CU_ASSERT_EQUAL(r.kill_handoffs[0], 1);
}

int main(void) {
  static const zkt_test tests[] = {
      {"the checker sees planted violations", test_checker},
      {"the checker counts multi-locks as the mutex's", test_checker_multi},
      {"the checker sees planted read/write lock violations",
       test_checker_rw},
      {"the checker sees planted semaphore violations", test_checker_sem},
      {"the checker judges holders cut off inside the ensemble",
       test_checker_ensemble},
      {"the checker judges the holder's work: a stop, a fork, a busy "
       "callback",
       test_checker_work},
      {"the checker judges zklock runs by their commands' work",
       test_checker_zklock},
      {NULL, NULL}};
  return zkt_main("fault checker", tests);
}
