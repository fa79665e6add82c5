/*
 * fault_check.h - the checker of the fault suite: reads the logs of a run
 * (tests/test_fault_suite.c writes the driver's, tests/contender.c the
 * contenders' and the resource's history) and counts what went wrong.
 *
 * Run directory:
 *   faults.log         the driver, one event a line, "<t> KIND args":
 *                        SPAWN slot gen pid
 *                        KILL-HOLDER slot pid token verified
 *                        KILL-WAITER slot pid node holder-slot
 *                        PAUSE slot pid token t0 t1 highest
 *                        LEADER-KILL server t0 t1 restart-status
 *                        LOST-CREATE slot pid proxy replies-lost
 *                        PARTITION slot pid token t0 t1 early told-at
 *                        CRASH slot pid status
 *                        SKIP kind why...
 *                        QUIESCE
 *                        DEAD slot pid           (reaped after the kill)
 *   c<slot>-<gen>.log  a contender process (format: tests/contender.c)
 *   history            every accepted write: token old new slot pid t
 * Times are CLOCK_MONOTONIC microseconds, one clock for all processes.
 *
 * What counts as a violation:
 *   overlap        two critical sections of different processes overlap in
 *                  time, neither of them paused by the driver nor told LOST
 *                  before the other began
 *   token order    the history's tokens do not strictly increase
 *   lost update    the history's counter does not go up by exactly one
 *   stale grant    a holder that was neither paused nor told LOST had its
 *                  write refused: the lock granted a token lower than one
 *                  already used
 *   late accept    a paused holder's late write was accepted although a
 *                  higher token had been accepted before it resumed
 *   unannounced    a paused holder whose session expired, or a holder cut
 *                  off from the servers past its lease, never reported LOST
 *   lease late     a cut-off holder reported LOST only after another
 *                  contender had been granted the lock
 *   accept count   contenders' ACCEPT lines and history lines disagree
 * Stuck: a wait (acquire) with a stretch longer than 3 x session timeout +
 * 10 s during which no contender held the lock, or a live, unpaused, not
 * waiting contender silent for that long.
 */
#ifndef ZKLOCK_TESTS_FAULT_CHECK_H
#define ZKLOCK_TESTS_FAULT_CHECK_H

#include <stdio.h>

enum {
  FC_LEADER_KILL,
  FC_KILL_HOLDER,
  FC_KILL_WAITER,
  FC_PAUSE_HOLDER,
  FC_LOST_CREATE,
  FC_PARTITION,
  FC_KINDS
};

extern const char *const fc_kind_names[FC_KINDS];

typedef struct fc_result {
  /* work done */
  long processes;  /* contender processes run */
  long sessions;   /* sessions they opened */
  long grants;     /* critical sections begun */
  long handoffs;   /* accepted writes (history lines) */
  long rejected;   /* refused writes, all of them */
  long acq_timeouts, acq_lost, acq_other; /* acquires that failed */
  long lost_by_reason[4];                 /* LOST lines, by ZKL_LOST_ */
  long long first_us, last_us;            /* span of the contenders' logs */
  /* faults */
  long faults[FC_KINDS];
  long skipped;
  long crashes;
  long kills_aimed; /* kills whose victim was where it was aimed */
  /* the paused holders */
  long pauses_proven; /* told LOST, and the late write refused */
  long pauses_late_rejected;
  long pauses_lost_told;
  /* sections told LOST while in them (not paused) */
  long lost_sections;
  /* the cut-off holders */
  long partitions_told;  /* told LOST (by the lease) in time */
  long partitions_early; /* healed right after LOST */
  long partitions_kept;  /* ... and the session lived on */
  /* violations */
  long overlaps, token_order, lost_updates, stale_grants, late_accepts,
      unannounced, lease_late, accept_mismatch;
  long violations; /* the sum of the above */
  long stuck;
  long long longest_free_wait_us; /* longest lock-free stretch in a wait */
} fc_result;

/* Checks the run in dir. session_ms is the contenders' session timeout.
 * Prints the details of every problem to report. Returns 0, or -1 when the
 * logs cannot be read (a hard error). */
int fc_check(const char *dir, int session_ms, fc_result *out, FILE *report);

/* Prints the figures as one block. */
void fc_print(const fc_result *r, long leaked, double seconds, FILE *out);

#endif
