/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/stop.pml - a holder's processes through zklockd and the agent's
 * stop, a model for spin. docs/lease-model.md ("The holder's processes and
 * the agent's stop") explains it; tests/stop-model checks it.
 *
 * The promise: the lock passes on only after its holder's work stopped.
 * When another contender holds the lock, the command zklock runs under it
 * no longer acts (every process of its tree is gone), and zklock no longer
 * believes it holds it. The agent deletes the holder's node only after the
 * holder's work stopped, or once the deadline it last relayed to the
 * holder has passed by the margin: by then the holder's own processes
 * have stopped the work (at H = D + m/2 at the latest).
 *
 * Taken as given: the lease (lease.pml's job): the agent's library has a
 * deadline D = anchor + T - m, the leader expires the agent's session no
 * sooner than anchor + T, an anchor moves only by a proof; and the relay
 * (relay.pml's job): the D the agent relays reaches the client in order
 * and is kept as an absolute time on the host's one clock. Here the client
 * reads the newest D relayed at any later moment: an older D read in
 * between only makes its deadlines earlier.
 *
 * Actors: the clock; the agent (its loop and library as one process, which
 * may stall for any time, may die, may be told to stop, and whose library
 * may end the hold at its maximum hold); the leader;
 * another contender; and the holder's three processes:
 *   Z  the client process (zklock), connected to the agent: it may die
 *      (SIGKILL) at any moment and may stall for any time (SIGSTOP, or a
 *      busy machine): every step of Z may wait;
 *   K  zklock's keeper, the command's parent and the subreaper of its
 *      tree, registered with the agent as a worker of Z's connection; Z
 *      writes it the hard stop H = D + m/2 of the lease it read (a shared
 *      page). K runs on time: its watchdog's SIGTERM and its SIGKILL are
 *      due before the next tick. It may learn of Z's death at any later
 *      moment (the same states as Z dying later). K killed (SIGKILL) is
 *      outside what is covered;
 *   W  the command's work, the process tree under K: the command C and
 *      what it starts, R, which may outlive C. Each acts while alive, and
 *      exits at any moment: by itself, at SIGTERM at once, late, or never;
 *      SIGKILL ends both at once (a process stuck in the kernel is outside).
 *
 * The rules (the code is being changed to these; docs/correctness.md):
 *   1. Z, on a loss (a LOST frame, the end of the connection, its own
 *      clock reaching D, or K having fired): K sends W SIGTERM at once and
 *      SIGKILL at min(now + g, H); Z releases only once K has exited, which
 *      K does once every process of W is reaped.
 *   2. K, if Z dies: the same, with the H it last had. If Z does not renew
 *      H in time (frozen, hung): SIGTERM at D + m/4, SIGKILL at
 *      min(that + g, H). K starts W only once Z says so, which Z does
 *      once the agent registered K, and only if the D on its page has not
 *      passed.
 *   3. The agent deletes the client's held node only when: the client
 *      released it; or Z is dead and K (if registered) is dead; or the D it
 *      last relayed to the client has passed by the margin. The end of the
 *      connection (EOF, a cut-off, a BYE) does not by itself delete it.
 *   4. The agent's stop: it stops relaying, sends the holder LOST, deletes
 *      its node by rule 3, then closes its session and exits. A maximum
 *      hold likewise sends LOST; the library also deletes the node once
 *      its own grace has run, which the agent sets to the client's grace
 *      plus T (here the client's is 0: T).
 *   5. A silent client is told no newer D (its node goes by rule 3's last
 *      clause); the model's agent may stop relaying at any time anyway.
 *   6. Another contender is granted once the node is gone.
 *
 * Time is discrete; every time is a time left, saturated, so the state
 * space is finite and the search covers runs of any length. `clock` is
 * for the printouts only.
 *
 * Options (spin -a -D...):
 *   (default)     the rules above;
 *   MARGIN=n      m in ticks, a multiple of 4 (default 4: m/4 = 1);
 *   T=n           the session timeout in ticks, more than MARGIN (default 8);
 *   GRACE=n       g, zklock's -k, in ticks (default MARGIN + 1, more than
 *                 the cap leaves: H cuts it);
 *   CONN_END      mutation (a), today's agent: Z's death (the end of its
 *                 stream, or its pidfd) deletes the node at once, K or not;
 *   CUT_OFF       mutation (a'), today's agent: cutting Z off (a client
 *                 that does not read, a silent one) deletes its node;
 *   SILENT_AT_D   mutation (b), today's agent: Z may freeze for good; the
 *                 agent takes a frozen client for silent and deletes its
 *                 node once the D it last relayed has passed (not D + m);
 *   NO_CAP        mutation (c): K's SIGKILL at now + g, H ignored (a -k
 *                 larger than the lease leaves);
 *   STOP_AT_ONCE  mutation (d), today's agent: its stop deletes the node at
 *                 once, told or not;
 *   RELEASE_AT_EXIT  mutation (e): Z releases when the command C has exited,
 *                 without waiting for K (the rest of the tree);
 *   LAPSE_DELETE  mutation (f), the library as it is (lib/engine.c, a hold
 *                 lost with ZKL_LOST_LEASE_EXPIRED): when the agent's own
 *                 lease runs out (its library's D), the library deletes the
 *                 node as soon as its session can;
 *   GO_EARLY      mutation (g): K starts the command before the agent has
 *                 registered K;
 *   NO_START_CHECK  mutation (h): K starts the command when Z says so, even
 *                 if the D on its page has passed (Z's word may come late);
 *   MAX_HOLD_GRACE0  mutation (i): the library's grace for a maximum hold
 *                 is the client's alone (0), without the agent's T;
 *   PROBE=1..6    situations the search must reach (see PROBE below).
 */

#ifndef MARGIN
#define MARGIN 4
#endif
#ifndef T
#define T 8
#endif
#ifndef GRACE
#define GRACE (MARGIN + 1)
#endif
#if MARGIN < 4 || MARGIN % 4 != 0 || T <= MARGIN
#error "MARGIN: a multiple of 4, less than T"
#endif
#define M4 (MARGIN / 4) /* D + m/4: K's watchdog moment, as time left to H */
#define M2 (MARGIN / 2) /* H = D + m/2 */

hidden short clock; /* printouts only */
hidden byte probe;  /* a probe reached (see PROBE below) */

/* the agent */
bool adead;    /* dead, or exited after its stop */
bool astop;    /* told to stop (SIGTERM) */
bool acut;     /* the client's connection is over on the agent's side (a
                  cut-off, or a BYE after an expiry): nothing more reaches
                  the agent from Z, nothing more is relayed to it */
bool lostq;    /* a LOST frame (the stop's, a maximum hold's) is on its
                  way to Z; nothing relayed after it counts (Z reads it
                  first, and is then no longer holding) */
bool mhold;    /* the library ended the hold at its maximum hold */
byte mh;       /* while mhold: time left until the library's grace ends */
bool kreg;     /* K is registered as a worker of Z's connection */
bool rel;      /* Z's release reached the agent */
byte ll = T;   /* time left until anchor + T: the leader's soonest expiry;
                  the agent's library's D is MARGIN before it */
byte rx = T;   /* time left until the D last relayed to Z + the margin
                  (the grant's reply, at 0, carried D = anchor + T - m) */

/* the leader */
bool sx;        /* expired the agent's session */
bool anode = 1; /* the agent's node for Z exists (granted at 0) */

/* Z */
byte zp;     /* 0: the grant's reply unread; 1: holds, K started and its
                registration asked; 2: K told to go (the command
                runs, unless K found the D on its page passed) */
bool zstop;  /* Z has seen its loss */
bool zdead;  /* died, or exited after its release */

/* K: kh is the page Z writes, H as time left (D + m/4 is kh == M4) */
byte kp;     /* 0: waits for Z's word; 1: runs the command; 2: exited */
byte kh;
bool kstop;  /* SIGTERM sent (by K, or by Z through K): the stop runs */
byte ks;     /* while kstop: time left until the SIGKILL */
bool kcap;   /* H cut the grace short: the SIGKILL comes at H */

/* W */
bool wc;     /* the command C runs */
bool wr;     /* a process C started runs (it may outlive C) */

/* the other contender */
bool ohold;

#ifdef SILENT_AT_D
bool zfrozen; /* Z stopped for good (SIGSTOP) */
bool silent;  /* the agent took Z for silent */
#define ZRUNS (!zdead && !zfrozen)
#else
#define ZRUNS (!zdead)
#endif

#define WALIVE (wc || wr)
#define BELIEVES (!zdead && zp > 0 && !zstop && !kstop && kh > M2)
#define HOF(x) (x > M2 -> x - M2 : 0) /* H from D + m, as times left */
#define DOWN(v) if :: v > 0 -> v-- :: else fi

/* K's timers are due: the clock waits for K, which is never stalled */
#define KDUE (kp == 1 && WALIVE && ((!kstop && kh <= M4) || (kstop && ks == 0)))

/* The stop begins: SIGTERM to W now, SIGKILL at min(now + g, H). */
#ifdef NO_CAP
#define STOP kstop = 1; ks = GRACE; kh = 0
#else
#define STOP \
  kstop = 1; \
  if :: kh < GRACE -> ks = kh; kcap = 1 :: else -> ks = GRACE fi; \
  kh = 0
#endif

/* What lets the agent delete Z's held node (rule 3), and the mutations
 * that add a way. */
#define BY_RELEASE rel
#define BY_DEATH (zdead && (!kreg || kp == 2))
#define BY_DEADLINE (rx == 0)
#define BY_MAX_HOLD (mhold && mh == 0) /* the library's own delete */
#ifdef MAX_HOLD_GRACE0
#define MHGRACE 0
#else
#define MHGRACE T
#endif
#ifdef CONN_END
#define MUT_DEL zdead
#elif defined(CUT_OFF)
#define MUT_DEL acut
#elif defined(SILENT_AT_D)
#define MUT_DEL (silent && rx <= MARGIN)
#elif defined(STOP_AT_ONCE)
#define MUT_DEL astop
#elif defined(LAPSE_DELETE)
#define MUT_DEL (!sx && ll <= MARGIN)
#else
#define MUT_DEL 0
#endif

/* Probes, which spin must find violated, so that the promise is not kept
 * vacuously (the assertion probe == 0):
 *   1  a W that ignored SIGTERM is killed at H (the grace was longer);
 *   2  the agent's stop waits for a release: Z read the stop's LOST while
 *      the command ran, and the node goes on Z's release;
 *   3  Z died while the command ran: the node went when K exited, before
 *      the deadline clause;
 *   4  a silent Z (alive, it never saw a loss): K's watchdog stopped the
 *      command, and the node goes by the deadline clause (D + m passed);
 *   5  K's watchdog fires (Z did not renew by D + m/4);
 *   6  the library's grace after a maximum hold is the first way out for
 *      the node: no release, Z or K alive, D + m not passed, K started.
 *      Not reached (tests/stop-model checks that): with the relay ended
 *      by the LOST, D + m comes first. */
#ifdef PROBE
bool zwaited; /* Z died while the command ran */
bool zlostw;  /* Z read the stop's LOST while the command ran */
#define REACH(n, cond) if :: PROBE == n && (cond) -> probe = n :: else fi; assert(probe == 0)
#define ZDIES zwaited = WALIVE
#define ZLOSES zlostw = (lostq && astop && WALIVE)
#else
#define REACH(n, cond) skip
#define ZDIES skip
#define ZLOSES skip
#endif

/* ---------------------------------------------------------------- clock */
active proctype Clock() {
  do
  :: atomic {
       !KDUE ->
       clock++;
       DOWN(ll);
       DOWN(rx);
       DOWN(kh);
       DOWN(ks);
       DOWN(mh)
     }
  od
}

/* ---------------------------------------------------------------- agent */
active proctype Agent() {
  do
  /* dies: the kernel ends the connection; its node stays until the leader
   * expires the session */
  :: atomic { !adead -> adead = 1; printf("@%d agent: dies\n", clock) }
  /* a proof: the leader heard the session now */
  :: atomic {
       !adead && !sx && ll < T -> ll = T;
       printf("@%d agent: proof, its D @%d\n", clock, clock + T - MARGIN)
     }
  /* relays its library's D to Z, while Z holds for it and its library
   * still believes (it never relays a lapsed deadline) */
  :: atomic {
       !adead && anode && !rel && !acut && !astop && !lostq && !zdead &&
#ifdef SILENT_AT_D
       !silent &&
#endif
       ll > MARGIN && rx < ll ->
       rx = ll;
       printf("@%d agent: LEASE D @%d\n", clock, clock + rx - MARGIN)
     }
  /* Z's request: K registered as its worker */
  :: atomic {
       !adead && zp > 0 && !kreg && !acut -> kreg = 1;
       printf("@%d agent: K registered\n", clock)
     }
  /* deletes Z's node */
  :: atomic {
       !adead && anode &&
       (BY_RELEASE || BY_DEATH || BY_DEADLINE || BY_MAX_HOLD || MUT_DEL) ->
       anode = 0;
       printf("@%d agent: deletes the node (released %d, Z dead %d, K registered %d exited %d, D + m passed %d, max hold's grace run %d)\n",
              clock, rel, zdead, kreg, kp == 2, rx == 0, BY_MAX_HOLD);
       REACH(2, astop && rel && zlostw);
       REACH(3, !rel && zdead && kreg && kp == 2 && zwaited && rx > 0 && !BY_MAX_HOLD);
       REACH(4, !rel && !zdead && !zstop && kstop && rx == 0 && !BY_MAX_HOLD);
       REACH(6, BY_MAX_HOLD && !rel && !BY_DEATH && rx > 0 && kp > 0)
     }
  /* told to stop: no more relaying; LOST to the holder */
  :: atomic {
       !adead && !astop -> astop = 1;
       if :: !acut && !zdead -> lostq = 1 :: else fi;
       printf("@%d agent: told to stop: LOST\n", clock)
     }
  /* its library ends the hold at its maximum hold: LOST, and the node
   * kept for the library's grace */
  :: atomic {
       !adead && anode && !mhold && !rel -> mhold = 1; mh = MHGRACE;
       if :: !acut && !zdead -> lostq = 1 :: else fi;
       printf("@%d agent: maximum hold: LOST\n", clock)
     }
  /* stopping, with no node left: closes its session and exits */
  :: atomic {
       !adead && astop && !anode -> adead = 1;
       printf("@%d agent: stopped\n", clock)
     }
  /* ends the connection: a cut-off, or the BYE of an expired session */
  :: atomic {
       !adead && !acut && !zdead -> acut = 1;
       printf("@%d agent: ends Z's connection\n", clock)
     }
#ifdef SILENT_AT_D
  :: atomic {
       !adead && zfrozen && !silent -> silent = 1;
       printf("@%d agent: Z silent\n", clock)
     }
#endif
  od
}

/* --------------------------------------------------------------- leader */
active proctype Leader() {
  do
  :: atomic {
       !sx && ll == 0 -> sx = 1; anode = 0;
       printf("@%d leader: expires the agent's session\n", clock)
     }
  od
}

/* --------------------------------------------------------------- other */
active proctype Other() {
  do
  :: atomic {
       !anode && !ohold -> ohold = 1;
       printf("@%d other: granted (W alive %d, Z believes %d)\n", clock, WALIVE, BELIEVES)
     }
  od
}

/* -------------------------------------------------------------------- Z */
active proctype Client() {
  do
  /* reads the grant's reply: holds; starts K and asks the agent to
   * register it */
  :: atomic {
       ZRUNS && zp == 0 -> zp = 1; kh = HOF(rx);
       printf("@%d Z: granted, D @%d\n", clock, clock + kh - M2)
     }
  /* the agent registered K: Z tells K to go. Z's clock reading may be
   * old by then (it may have stalled since), so K, which runs on time,
   * starts the command only if the D on its page has not passed */
  :: atomic {
       ZRUNS && zp == 1 && !zstop && kp == 0 &&
#ifndef GO_EARLY
       kreg &&
#endif
       1 -> zp = 2;
#ifndef NO_START_CHECK
       if
       :: kh <= M2 -> kp = 2;
          printf("@%d Z: K goes, finds D passed: exits\n", clock)
       :: else ->
#endif
          kp = 1; wc = 1;
          printf("@%d Z: K goes, the command starts\n", clock)
#ifndef NO_START_CHECK
       fi
#endif
     }
  /* reads the newest D, and writes its H on K's page */
  :: atomic {
       ZRUNS && zp > 0 && !zstop && !kstop && kh < HOF(rx) -> kh = HOF(rx);
       printf("@%d Z: D @%d\n", clock, clock + kh - M2)
     }
  /* its loss: its clock at D, LOST, the connection's end, or K fired */
  :: atomic {
       ZRUNS && zp > 0 && !zstop &&
       (kh <= M2 || lostq || acut || adead || kstop) ->
       printf("@%d Z: lost (D reached %d, LOST %d, EOF %d, K fired %d)\n",
              clock, kh <= M2 && !kstop, lostq, acut || adead, kstop);
       ZLOSES;
       zstop = 1;
       if :: kp == 1 && !kstop && WALIVE -> STOP :: else fi;
       kh = 0
     }
  /* releases once K has exited (the tree is gone), and exits */
  :: atomic {
       ZRUNS && zp > 0 && kp == 2 ->
       if :: !acut && !adead -> rel = 1 :: else fi; zdead = 1;
       printf("@%d Z: K exited: releases, exits\n", clock)
     }
#ifdef RELEASE_AT_EXIT
  :: atomic {
       ZRUNS && zp == 2 && kp == 1 && !wc ->
       if :: !acut && !adead -> rel = 1 :: else fi; zdead = 1;
       printf("@%d Z: the command exited: releases, exits\n", clock)
     }
#endif
  :: atomic { !zdead -> ZDIES; zdead = 1; printf("@%d Z: killed\n", clock) }
#ifdef SILENT_AT_D
  :: atomic { ZRUNS -> zfrozen = 1; printf("@%d Z: frozen\n", clock) }
#endif
  /* acts as the holder */
  :: atomic { BELIEVES -> assert(!(ohold && kh > M2)) }
  od
}

/* -------------------------------------------------------------------- K */
active proctype Keeper() {
  do
  /* never told to go: exits */
  :: atomic {
       kp == 0 && (zdead || zstop) -> kp = 2;
       printf("@%d K: exits, the command never started\n", clock)
     }
  /* Z died: SIGTERM now, SIGKILL at min(now + g, H) */
  :: atomic {
       kp == 1 && zdead && !kstop && WALIVE -> STOP;
       printf("@%d K: Z dead: SIGTERM, SIGKILL @%d\n", clock, clock + ks)
     }
  /* Z did not renew by D + m/4: the watchdog's SIGTERM */
  :: atomic {
       kp == 1 && !kstop && WALIVE && kh <= M4 -> STOP;
       printf("@%d K: D + m/4, not renewed: SIGTERM, SIGKILL @%d\n", clock, clock + ks);
       REACH(5, 1)
     }
  :: atomic {
       kp == 1 && kstop && ks == 0 && WALIVE ->
       printf("@%d K: SIGKILL (at H %d)\n", clock, kcap);
       REACH(1, kcap);
       wc = 0; wr = 0
     }
  /* every process reaped: K exits */
  :: atomic {
       kp == 1 && !WALIVE -> kp = 2; ks = 0; kcap = 0;
       printf("@%d K: the tree is gone: exits\n", clock)
     }
  od
}

/* -------------------------------------------------------------------- W */
active proctype Work() {
  do
  :: atomic { wc && !wr -> wr = 1; printf("@%d W: C starts R\n", clock) }
  :: atomic { wc -> wc = 0; printf("@%d W: C exits\n", clock) }
  :: atomic { wr -> wr = 0; printf("@%d W: R exits\n", clock) }
  /* acts under the lock */
  :: atomic { WALIVE -> assert(!(ohold && (wc || wr))) }
  od
}
