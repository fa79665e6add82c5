/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_check.h - the checker of the fault suite: reads the logs of a run
 * (tests/test_fault_suite.c writes the driver's, tests/contender.c the
 * contenders' and the resources' histories) and counts what went wrong,
 * for each kind of lock: the mutex, the read/write lock, the semaphore.
 *
 * Run directory:
 *   faults.log         the driver, one event a line, "<t> KIND args":
 *                        SPAWN slot gen pid [mutex|rw|sem:N]
 *                        KILL-HOLDER slot pid token verified [who]
 *                        KILL-WAITER slot pid node holder-slot [multi]
 *                        PAUSE slot pid token t0 t1 highest [who]
 *                        LEADER-KILL server t0 t1 restart-status
 *                                    restarted-at
 *                        LOST-CREATE slot pid proxy replies-lost [op]
 *                        PARTITION slot pid token t0 t1 early told-at [who]
 *                        ENSEMBLE-CUT slot pid token t0 t1 told-at server
 *                                    role shape [who]
 *                        CRASH slot pid status
 *                        SKIP kind why...
 *                        AGENT-KILL slot pid token t0 t1 agent [who]
 *                        AGENT-FREEZE slot pid token t0 t1 agent [who]
 *                        AGENT-STOP slot pid token t0 t1 agent [who]
 *                        FORK-KILL slot pid token t-kill via [who]
 *                        BUSY slot pid token t0 t1 via [who]
 *                        ZKLOCK-KILL slot pid token t-kill via zklock zpid
 *                        ZKLOCK-LOSS slot pid token t0 t1 via zklock
 *                        QUIESCE
 *                      A slot runs one kind of lock (its SPAWN lines say
 *                      which; mutex when unsaid). A leader kill hits every
 *                      kind at once and counts for each. who: "reader",
 *                      "writer" (rw), "multi" (mutex: a multi-lock of the
 *                      mutex's name and another) or "holder"; "multi"
 *                      after a KILL-WAITER: a multi-lock's waiter; op: the
 *                      opcode the proxies were armed with (14, a multi: a
 *                      multi-lock's enqueue; 15, a create2).
 *                      ENSEMBLE-CUT: a holder whose session was pinned to
 *                      one server (its paths to the others black-holed, as
 *                      a rack's clients lose them with the rack) while that
 *                      server was cut off inside the ensemble: role
 *                      "leader" or "follower" (what the server was at the
 *                      cut), shape "isolate" (every link of the server
 *                      cut: FC_SERVER_CUT) or, for its link to the leader
 *                      (FC_LEADER_LINK), "oneway-out" (its packets to the
 *                      leader dropped), "oneway-in" (the leader's to it)
 *                      or "flap" (up 200 ms, down 2 s); told-at 0: the
 *                      driver saw no LOST.
 *                      AGENT-STOP: the agent of a holder stopped
 *                      (SIGTERM) at t0, up again at t1. FORK-KILL: a
 *                      holder whose section ran in a helper it forked (a
 *                      worker of its session, dying with it) was SIGKILLed
 *                      at t-kill; the line's own time is when it was
 *                      reaped. BUSY: a holder whose library callback
 *                      thread was kept busy from t0 to t1 (its section's
 *                      END). via: the letter of the agent the holder
 *                      locked through, or '-' (direct).
 *                      SPAWN's mode "zklock": a contender of the mutex
 *                      that locks with the zklock command
 *                      (tests/cli_contender.c): its log has the lines of
 *                      the zklock runs' commands and their children too.
 *                      ZKLOCK-KILL: its zklock (pid zpid) SIGKILLed while
 *                      its command's grandchild worked; ZKLOCK-LOSS: a
 *                      loss (its proxies cut, its agent stopped) from t0
 *                      to t1 while that grandchild, ignoring SIGTERM,
 *                      worked.
 *   c<slot>-<gen>.log  a contender process (format: tests/contender.c;
 *                      "START token m": a multi-lock, counted apart)
 *   history            the mutex's resource: every accepted write,
 *                      "token old new slot pid t"
 *   rw-history, sem-history   the other resources, in the order they saw
 *                      things (format: tests/fault_resource.h)
 * Times are CLOCK_MONOTONIC microseconds, one clock for all processes.
 *
 * What counts as a violation (a section is excused from the time when it
 * spans a pause of its process by the driver, or from when its contender
 * was told LOST):
 *   overlap        by the contenders' clocks, sections that exclude each
 *                  other overlapped (mutex: any two; rw: a writer and
 *                  anyone; sem: more than N at once), none of them excused
 *   resource       the resource saw it, in its own order: rw, a writer
 *                  entered beside anyone or a reader beside a writer; sem,
 *                  more than N registered, none of them excused
 *   token order    the mutex's or the rw writers' accepted tokens do not
 *                  strictly increase
 *   lost update    the counter does not go up by exactly one per write
 *   read changed   a reader the resource vouched for saw the counter change
 *                  during its section
 *   stale grant    a holder neither paused nor told LOST had its write (rw:
 *                  or read) refused: the lock granted a token lower than
 *                  one already accepted
 *   late accept    a paused holder's late write was accepted although a
 *                  higher token had been accepted before it resumed
 *   unannounced    a paused holder whose lock went to another (mutex, rw: a
 *                  newer token accepted; sem: its lease taken, more than N
 *                  registered with it), or a holder cut off past its lease,
 *                  never reported LOST
 *   lease late     a cut-off holder reported LOST only after another
 *                  contender was granted what excludes it
 *   (a client of an agent killed or frozen while it held, AGENT-KILL and
 *   AGENT-FREEZE, is judged as a cut-off holder: it must be told LOST, by
 *   the agent's EOF or by the relayed lease on its own clock, before
 *   another contender is granted what excludes it; t0 is the kill or the
 *   SIGSTOP, t1 the restart or the SIGCONT)
 *   (a holder whose server was cut off inside the ensemble, ENSEMBLE-CUT,
 *   is judged as a cut-off holder, but one never told whose lock went to
 *   nobody else during its section "kept" it: no violation, counted apart;
 *   so is a holder whose callback thread was kept busy, BUSY)
 *   work late      a holder whose lock must pass only once its work has
 *                  stopped (AGENT-STOP: the agent's stop tells, then waits
 *                  for the release), told LOST, saw another contender
 *                  granted what excludes it before its END: its section
 *                  holds until its END, not until the notice, in every
 *                  check (the resources' too), and must have been told
 *                  LOST at all ("unannounced" otherwise)
 *   (a FORK-KILL victim's section lasts until it was reaped, or until the
 *   last line its log got after that, should its helper outlive it: what
 *   the helper did is judged as the holder's own)
 *   (every hold of a zklock contender is under the work rule, told or
 *   not: zklock lets go only once its command's processes are gone; and a
 *   line of its token after the hold's REL, a grandchild's, extends it.
 *   A ZKLOCK-LOSS victim must be told: LOST from the grandchild, at
 *   zklock's SIGTERM)
 *   accept count   contenders' ACCEPT lines and the history disagree
 * Late handoff (not a violation, counted apart): a FORK-KILL or ZKLOCK-KILL
 * victim through an agent (mutex, rw writer) whose lock was next granted
 * to another more than a session timeout after the kill (the agent must
 * free it once the holder and its helper, or zklock's keeper, are gone,
 * not at its lease's end).
 * Stuck: a wait (acquire) with a stretch longer than 3 x session timeout +
 * 10 s during which the lock was free (mutex, rw: nobody held it; sem:
 * fewer than N did), or a live, unpaused, not waiting contender silent for
 * that long.
 * What shows that the test tests something: readers that overlapped
 * (seen by the resource: one entered while another was in), and the
 * semaphore at its limit (N registered at once).
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
  FC_SERVER_CUT,
  FC_LEADER_LINK,
  FC_KINDS,
  /* Faults of the agents' run only (test_fault_suite's second test), kept
   * out of FC_KINDS, which the main run's rounds go through: */
  FC_AGENT_KILL = FC_KINDS, /* zklockd killed (-9) while a client held */
  FC_AGENT_FREEZE,          /* zklockd stopped (SIGSTOP) past its session
                               timeout while a client held */
  FC_AGENT_STOP,            /* zklockd stopped (SIGTERM) while a client
                               held */
  FC_FORK_KILL,             /* a holder whose helper (a forked worker)
                               did its section, SIGKILLed */
  FC_BUSY,                  /* a holder's library callback thread kept busy
                               past its session timeout */
  FC_ZKLOCK_KILL,           /* zklock SIGKILLed, its command's grandchild
                               at work */
  FC_ZKLOCK_LOSS,           /* zklock's hold lost while its command's
                               grandchild ignored SIGTERM */
  FC_ALL_KINDS
};

/* The shapes of an FC_LEADER_LINK fault, as ENSEMBLE-CUT lines name them
 * (FC_SERVER_CUT's is "isolate"). */
enum { FC_ONEWAY_OUT, FC_ONEWAY_IN, FC_FLAP, FC_LINK_SHAPES };
extern const char *const fc_link_shape_names[FC_LINK_SHAPES];

/* The opcode of a zoo_multi: a LOST-CREATE armed with it lost a
 * multi-lock's enqueue. */
#define FC_OP_MULTI 14

/* The kinds of lock; the same order as FR_MUTEX, FR_RW, FR_SEM. */
enum { FC_MUTEX, FC_RW, FC_SEM, FC_LOCKS };

extern const char *const fc_kind_names[FC_ALL_KINDS];
extern const char *const fc_lock_names[FC_LOCKS];

typedef struct fc_result {
  /* work done */
  long processes;  /* contender processes run */
  long sessions;   /* sessions they opened */
  long grants;     /* critical sections begun */
  long handoffs;   /* mutex: accepted writes; rw: accepted writes and
                      vouched reads; sem: registrations */
  long rejected;   /* refused writes (rw: and reads), all of them */
  long acq_timeouts, acq_lost, acq_other; /* acquires that failed */
  long lost_by_reason[8];                 /* LOST lines, by ZKL_LOST_ */
  long long first_us, last_us;            /* span of the contenders' logs */
  /* faults */
  long faults[FC_ALL_KINDS];
  long skipped;
  long crashes;
  long kills_aimed; /* kills whose victim was where it was aimed */
  /* the paused holders */
  long pauses_proven; /* told LOST, and the late write refused (sem: its
                         lease taken by another meanwhile) */
  long pauses_late_rejected;
  long pauses_lost_told;
  /* sections told LOST while in them (not paused) */
  long lost_sections;
  /* the cut-off holders */
  long partitions_told;  /* told LOST (by the lease) in time */
  long partitions_early; /* healed right after LOST */
  long partitions_kept;  /* ... and the session lived on */
  /* holders cut off by a cut inside the ensemble (FC_SERVER_CUT and
   * FC_LEADER_LINK, by kind of fault) */
  long told_first[FC_ALL_KINDS]; /* told LOST before anyone else was granted
                                what excludes them */
  long kept_lock[FC_ALL_KINDS];  /* never told, and nobody else granted what
                                excludes them during their section */
  long on_leader[FC_ALL_KINDS];  /* their server was the leader (the others: a
                                follower) */
  long link_shapes[FC_LINK_SHAPES]; /* FC_LEADER_LINK victims by shape */
  long told_by_eof; /* FC_AGENT_KILL victims told first with ZKL_LOST_AGENT
                       (the agent's socket closed), not by the lease */
  long stop_told_agent; /* FC_AGENT_STOP victims told with ZKL_LOST_AGENT */
  long via_agent[FC_ALL_KINDS];      /* FC_FORK_KILL, FC_BUSY, FC_ZKLOCK_*
                                        victims that locked through an
                                        agent */
  long told_via_agent[FC_ALL_KINDS]; /* ... and were told LOST */
  /* FC_FORK_KILL, FC_ZKLOCK_KILL (mutex, rw writers): from the kill to
   * the next grant of what excludes the victim, [0] direct, [1] through
   * an agent */
  long kill_handoffs[2];
  long long kill_handoff_min_us[2], kill_handoff_max_us[2];
  long late_handoffs; /* through an agent, later than a session timeout */
  /* From "told" to the next grant of what excludes the victim (mutex, rw;
   * cut-off holders of every kind, FC_PARTITION's too, but not those healed
   * at LOST, who let go themselves; FC_AGENT_STOP: from its END, when its
   * work stopped): how many, the least and the most, in us. */
  long margins[FC_ALL_KINDS];
  long long margin_min_us[FC_ALL_KINDS], margin_max_us[FC_ALL_KINDS];
  /* rw */
  long writes, reads;     /* accepted writes, vouched reads */
  long downgrades;        /* read sides taken while the write side held */
  long on_readers[FC_ALL_KINDS]; /* faults aimed at a reader (the others of
                                those kinds at a writer) */
  long readers_together;  /* readers that entered the resource while
                             another was in */
  long max_readers;       /* readers in the resource at once, at most */
  /* sem */
  int limit;              /* N */
  long at_limit;          /* registrations that made N at once */
  long max_held;          /* unexcused holders registered at once */
  /* mutex: multi-locks of its name and another */
  long multi_grants;      /* sections of a multi-lock holder */
  long zklock_grants;     /* sections of a zklock run */
  long on_multi[FC_ALL_KINDS]; /* faults aimed at one (lost create: replies
                              lost of its enqueue) */
  /* violations */
  long overlaps, resource_overlaps, token_order, lost_updates, read_changed,
      stale_grants, late_accepts, unannounced, lease_late, work_late,
      accept_mismatch;
  long violations; /* the sum of the above */
  long stuck;
  long long longest_free_wait_us; /* longest lock-free stretch in a wait */
} fc_result;

/* Checks the run in dir. session_ms is the contenders' session timeout.
 * Prints the details of every problem to report. Fills total with the
 * figures of the whole run and, when per_lock is not NULL, per_lock[k]
 * with those of lock kind k (processes 0: none of that kind ran).
 * Returns 0, or -1 when the logs cannot be read (a hard error). */
int fc_check(const char *dir, int session_ms, fc_result *total,
             fc_result per_lock[FC_LOCKS], FILE *report);

/* Prints the figures as one block: the total, then each kind that ran. */
void fc_print(const fc_result *total, const fc_result per_lock[FC_LOCKS],
              long leaked, double seconds, FILE *out);

#endif
