/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/relay.pml - the lease relayed through zklockd, a model for spin.
 * docs/lease-model.md ("The relay through zklockd") explains it;
 * tests/relay-model checks it.
 *
 * The promise: when another contender is granted the lock, the client
 * process that held it through the agent no longer believes it holds it.
 * Another is granted only once the agent's node is gone: the leader
 * expired the agent's session, or the agent deleted the node (a release,
 * or a loss its library decided).
 *
 * Taken as given (lease.pml's job): the agent's library has a deadline
 * D = anchor + T - margin; the leader expires the session no sooner than
 * anchor + T; an anchor moves only by a proof (the leader heard the
 * session then); the library stops believing at D.
 *
 * Actors: the agent (its loop and its library as one process, which may
 * freeze at any point for any time, and may die), its socket to one client
 * (FIFO, delivered in order, each frame read at any later moment), the
 * client (its own thread, reading frames and keeping the deadline by its
 * own clock, the model's clock), the leader, and another contender.
 *
 * Time is discrete; every time is a time left, saturated, so the state
 * space is finite and the search covers runs of any length. `clock` is
 * for the printouts only.
 *
 * Options (spin -a -D...):
 *   (default)  the rule as docs/correctness.md states it: the client keeps
 *              the newest D it read (grant reply or LEASE) and declares its
 *              hold lost when its clock reaches D, or on LOST, BYE, EOF;
 *   NO_CLOCK   mutation: the client acts on LOST, BYE and EOF only;
 *   RELATIVE   mutation: the client turns D into a timeout when it reads
 *              it: its deadline is the read time + (D - the send time);
 *   MAX_D      the client keeps the largest D it ever read (not a hazard:
 *              a D never moves back; this run passes);
 *   ZERO_NONE  the code as it is: between its library's loss and the LOST
 *              frame, the agent may relay LEASE 0 ("none": the library no
 *              longer has a deadline), and the client then stops keeping
 *              the deadline by its clock;
 *   KEEP_ON_ZERO  with ZERO_NONE, the client keeps the D it has when a
 *              LEASE 0 comes (a fix; this run passes);
 *   AGENT_LOSS the agent's library may end the hold for a reason of its
 *              own at any time (a maximum hold) and delete the node: a
 *              loss the client can learn only from the LOST frame;
 *   MARGIN=n   the lease margin in ticks (default 0);
 *   CAP=n      frames that may wait in the socket (default 2);
 *   PROBE=1, 2 situations the search must reach (see PROBE below).
 */

#ifndef T
#define T 4 /* the session timeout, in ticks */
#endif
#ifndef MARGIN
#define MARGIN 0
#endif
#ifndef CAP
#define CAP 2
#endif
#define DMAX (T - MARGIN) /* a fresh lease: D is DMAX ahead */
#define NONE 255          /* LEASE 0: no deadline */

/* frame kinds */
#define GRANT 1 /* the acquire's reply, with D */
#define LEASE 2 /* D moved */
#define LOST 3
#define BYE 4 /* the session expired: the connection ends */

hidden short clock; /* printouts only */
hidden byte i;      /* scratch, within one atomic step */

/* the socket, agent -> client: a FIFO of CAP frames, each with D as time
 * left (it falls with the clock while the frame waits) and D - the send
 * time (fixed: what a relative timeout would count from its read) */
byte qn;
byte qk[CAP];
byte qd[CAP];
byte qr[CAP];

/* the agent */
bool frozen;
bool dead;
byte ad = DMAX; /* its library's D, as time left (0: reached) */
bool alib;      /* its library holds the lock for the client */
bool lostq;     /* the library lost the hold; its LOST frame is to be queued
                   (with ZERO_NONE: the client is still "holding" for the
                   agent's relay meanwhile) */
bool del;       /* the library deletes the node: the delete is on its way */
bool req;       /* the client asked for the lock */
bool rel;       /* the client released it: the agent is to delete the node */

/* the leader */
byte ll = T;  /* time left until anchor + T: the soonest it may expire */
bool sx;      /* the leader expired the session (the agent does not know
                 yet) */
bool anode;   /* the agent's node for the client exists */

/* the client */
bool held;       /* holds, as far as frames and its clock told it */
byte cd = NONE;  /* the deadline it keeps, as time left */
bool over;       /* its session is over (BYE, EOF) */
bool asking;     /* its acquire waits for the reply */

/* the other contender */
bool ohold;

#ifdef NO_CLOCK
#define BELIEVES held
#else
#define BELIEVES (held && (cd == NONE || cd > 0))
#endif

#define DOWN(v) if :: v > 0 && v != NONE -> v-- :: else fi

/* queue a frame (the caller checks qn < CAP) */
#define SEND(k, d) qk[qn] = k; qd[qn] = d; qr[qn] = d; qn++

/* Probes, which spin must find violated, so that the promise is not kept
 * vacuously. PROBE=1: another is granted in the very tick the client's
 * deadline is reached (the relayed D is as late as it may be). PROBE=2:
 * the client still believes it holds more than DMAX ticks after its grant
 * (a LEASE frame moved its deadline on: the relay renews). */
#ifdef PROBE
bool atdead; /* the client's deadline was reached in this tick */
byte hage;   /* ticks since the client's grant (saturated) */
#define PROBE_GRANT assert(!(PROBE == 1 && atdead))
#define PROBE_CLIENT_GRANT hage = 0
#define PROBE_TICK \
  atdead = (held && cd == 1); \
  if :: held && hage <= DMAX -> hage++ :: else fi; \
  assert(!(PROBE == 2 && BELIEVES && hage > DMAX))
#else
#define PROBE_GRANT skip
#define PROBE_CLIENT_GRANT skip
#define PROBE_TICK skip
#endif

/* ---------------------------------------------------------------- clock */
/* A tick passes; the client's clock is this clock. A client that holds
 * declares the loss when its clock reaches D before the next tick: its
 * thread is not frozen (a frozen client learns when it runs again). */
active proctype Clock() {
  do
  :: atomic {
#ifndef NO_CLOCK
       !(held && cd == 0) ->
#endif
       clock++;
       PROBE_TICK;
       DOWN(ad);
       DOWN(ll);
       DOWN(cd);
       i = 0;
       do
       :: i < qn -> DOWN(qd[i]); i++
       :: else -> break
       od;
       i = 0
     }
  od
}

/* ---------------------------------------------------------------- agent */
/* Every step but freezing and thawing needs a running agent. */
#define RUNS (!dead && !frozen)

active proctype Agent() {
  do
  :: atomic { RUNS -> frozen = 1; printf("@%d agent: frozen\n", clock) }
  :: atomic { !dead && frozen -> frozen = 0; printf("@%d agent: thaws\n", clock) }
  /* dies: the kernel closes the socket; the node stays until the leader
   * expires the session, and a delete on its way is lost */
  :: atomic { !dead -> dead = 1; del = 0; printf("@%d agent: dies\n", clock) }
  /* a proof: the leader heard the session at the anchor, now */
  :: atomic {
       RUNS && !sx && (ad < DMAX || ll < T) ->
       ad = DMAX; ll = T;
       printf("@%d agent: proof, D @%d\n", clock, clock + DMAX)
     }
  /* grants the client's request (after its release, which the client
   * sent first): the lock is free, the lease fresh */
  :: atomic {
       RUNS && req && !rel && !sx && ad > 0 && !anode && !ohold && !alib && !lostq &&
       qn < CAP ->
       req = 0; anode = 1; alib = 1; SEND(GRANT, ad);
       printf("@%d agent: grants, D @%d\n", clock, clock + ad)
     }
  /* relays its library's D (any time: whether it moved by 100 ms, and
   * when the loop gets to it, is left open) */
  :: atomic {
       RUNS && alib && qn < CAP -> SEND(LEASE, ad);
       printf("@%d agent: LEASE D @%d\n", clock, clock + ad)
     }
#ifdef ZERO_NONE
  /* the library's hold count is 0, the client not yet marked lost: the
   * library's deadline reads 0 and the relay sends it */
  :: atomic {
       RUNS && lostq && qn < CAP -> SEND(LEASE, NONE);
       printf("@%d agent: LEASE 0\n", clock)
     }
#endif
  /* its library reaches D: the hold is lost, and the node deleted */
  :: atomic {
       RUNS && alib && ad == 0 ->
       alib = 0; lostq = 1; del = 1;
       printf("@%d agent: its library's lease ran out: lost\n", clock)
     }
#ifdef AGENT_LOSS
  /* its library ends the hold for a reason of its own (a maximum hold) */
  :: atomic {
       RUNS && alib ->
       alib = 0; lostq = 1; del = 1;
       printf("@%d agent: its library ends the hold (max hold)\n", clock)
     }
#endif
  /* the lost callback: the LOST frame is queued */
  :: atomic {
       RUNS && lostq && qn < CAP -> lostq = 0; SEND(LOST, 0);
       printf("@%d agent: LOST\n", clock)
     }
  /* the delete reaches the leader (a release, or a loss) */
  :: atomic {
       RUNS && del -> del = 0;
       if :: !sx && anode -> anode = 0; printf("@%d leader: node deleted\n", clock)
          :: else fi
     }
  /* the client's release: the library releases, and deletes the node */
  :: atomic {
       RUNS && rel -> rel = 0;
       if :: alib -> alib = 0; del = 1 :: else fi
     }
  /* learns that the session expired: BYE to the client (its holds are
   * lost), and a new session, proven at once */
  :: atomic {
       RUNS && sx && qn < CAP ->
       SEND(BYE, 0); alib = 0; lostq = 0; del = 0; rel = 0; req = 0;
       sx = 0; ad = DMAX; ll = T;
       printf("@%d agent: session expired; BYE, and a new session\n", clock)
     }
  od
}

/* --------------------------------------------------------------- leader */
/* Expires the session at any moment once anchor + T has passed with no
 * later proof: the agent's ephemeral node goes with it. */
active proctype Leader() {
  do
  :: atomic {
       !sx && ll == 0 -> sx = 1; anode = 0;
       printf("@%d leader: expires the session\n", clock)
     }
  od
}

/* --------------------------------------------------------------- other */
active proctype Other() {
  do
  :: atomic {
       !anode && !ohold -> ohold = 1;
       printf("@%d other: granted; the client (held %d, D in %d) believes %d\n",
              clock, held, cd, BELIEVES);
       assert(!BELIEVES); /* the client was told before the grant */
       PROBE_GRANT
     }
  :: atomic { ohold -> ohold = 0; printf("@%d other: releases\n", clock) }
  od
}

/* --------------------------------------------------------------- client */
active proctype Client() {
  byte k, d, r;
  do
  /* asks for the lock */
  :: atomic { !over && !held && !asking -> req = 1; asking = 1 }
  /* releases: it stops holding, then tells the agent */
  :: atomic {
       BELIEVES -> held = 0; rel = 1;
       printf("@%d client: releases\n", clock)
     }
  /* reads the next frame */
  :: atomic {
       qn > 0 ->
       k = qk[0]; d = qd[0]; r = qr[0];
       i = 1;
       do
       :: i < qn -> qk[i - 1] = qk[i]; qd[i - 1] = qd[i]; qr[i - 1] = qr[i]; i++
       :: else -> break
       od;
       qn--; i = 0;
#ifdef RELATIVE
       if :: d != NONE -> d = r :: else fi;
#endif
       if
       :: k == GRANT -> held = 1; asking = 0; PROBE_CLIENT_GRANT;
#ifdef MAX_D
          if :: cd == NONE || d > cd -> cd = d :: else fi
#else
          cd = d
#endif
       :: k == LEASE ->
#if defined(MAX_D)
          if :: d != NONE && (cd == NONE || d > cd) -> cd = d :: else fi
#elif defined(KEEP_ON_ZERO)
          if :: d != NONE || !held -> cd = d :: else fi
#else
          cd = d
#endif
       :: k == LOST -> held = 0
       :: k == BYE -> held = 0; over = 1
       fi;
       printf("@%d client: reads %d (1 grant, 2 lease, 3 lost, 4 bye), D in %d: believes %d\n",
              clock, k, d, BELIEVES);
       k = 0; d = 0; r = 0
     }
#ifndef NO_CLOCK
  /* its clock reaches D */
  :: atomic {
       held && cd == 0 -> held = 0;
       printf("@%d client: its clock reaches D: lost\n", clock)
     }
#endif
  /* the end of the stream, after every frame the agent wrote */
  :: atomic {
       dead && qn == 0 && !over -> held = 0; over = 1;
       printf("@%d client: EOF: lost\n", clock)
     }
  od
}
