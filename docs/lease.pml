/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/lease.pml - the lease protocol of libzklock, a model for spin.
 * docs/lease-model.md explains it; tests/lease-model checks it.
 *
 * The promise: a lock holder is told it lost the lock before anyone else
 * can be granted it. Here: no leader that can commit closes the session
 * while the client's deadline is still ahead, and no answer moves the
 * deadline ahead once such a leader has closed it.
 *
 * Actors: the leader L, one follower F, the rest of the ensemble as one
 * block MJ that is a majority without L and F (5 servers: L, F and three
 * in MJ), a new leader L2 that MJ may elect, and one client with one
 * session, connected to L or to F.
 *
 * Time is discrete. No absolute time is stored: every time is kept as an
 * age or a time left, saturated where larger values no longer matter, so
 * the state space is finite although runs are not bounded in length: the
 * search covers runs of any length. `clock` is there for the printouts
 * only (hidden: not part of the state).
 *
 * Options (spin -a -D...):
 *   (default)  the new rule: a proof triple X, Y, M on one connection, and
 *              a reconnect: the latest answered request before it, proven
 *              by a write (M) on the new connection (the server had the
 *              leader revalidate, that is touch, the session first);
 *   NO_RECONNECT  the triple alone;
 *   RECONNECT_ANY mutation: a reconnect proves the latest answer's send
 *              time by itself, with no write after it;
 *   OLD_RULE   anchor := the send time of the latest answered request;
 *   M_SYNC     mutation: M may be a sync as well as a write;
 *   P=n        the ping bound in ticks (P=0: no gap between r_X and t_Y);
 *   JITTER     each ping comes at any moment of its tick, not at its start;
 *   HEAL       the L-MJ links may also come back (late commits);
 *   CAP=n      how many messages may wait in a direction of the L-F link;
 *   PROBE=1, 2, 3 situations the search must reach (see PROBE below);
 *   CLIENT_ON=1 or 2  the client only on L (and F idle), only on F;
 *   STABLE_MAJORITY   L is never cut from MJ.
 * The last two only take behaviours away: a violation found with them is
 * one of the whole model. docs/lease-model.md lists the runs.
 */

/* ------------------------------------------------------------ constants */
/* A model tick is tickTime/2, the leader's ping period: each tick begins
 * with a ping to F. (JITTER: the ping comes at any moment of its tick, so
 * two pings are up to 2 ticks apart.) T = 2 x tickTime, the least
 * ZooKeeper grants (its minSessionTimeout): the case the client's default
 * P = T/4 = tickTime/2 is made for. */
#define TT 2 /* tickTime */
#ifndef T
#define T 4 /* session timeout: 2 x tickTime */
#endif
#ifndef SYNC
#define SYNC 2 /* syncLimit x tickTime (syncLimit = 1): read timeouts */
#endif
#ifndef P
#ifdef JITTER
#define P 2 /* the client's ping bound: at least the longest ping gap */
#else
#define P 1
#endif
#endif
#ifndef CAP
#define CAP 1 /* messages that may wait in a direction of the L-F
                 connection: the delay (L->F: pings; its answers always
                 find room, as L's queue of packets to send is unbounded) */
#endif

#define NONE 255 /* no candidate */
#define RD 1     /* request kinds */
#define SY 2
#define WR 3
#define ON_L 1 /* where the client is connected */
#define ON_F 2

mtype = { PING, PINGR, SYNCQ, WRITEQ, SYNCA, WRES, CLOSE };

/* ---------------------------------------------------------------- state */
hidden short clock; /* printouts only */
hidden mtype m;     /* scratch, within one atomic step */
hidden byte b, k;

/* the client */
byte srv;        /* 0: not connected; ON_L; ON_F */
byte dl = T;     /* its deadline, as time left; 0: told. The session was
                    created through L at time 0: anchor 0 */
byte rk;         /* a request in flight (forwarded by F, or a write that
                    waits at L for a quorum): 0, SY or WR */
byte rage;       /* its age */
bool isY;        /* it is a Y for the chosen X ... */
bool isM;        /* ... or an M for the proven ya */
byte x_t = NONE; /* the chosen X: age of its send time t_X ... */
byte x_r;        /* ... and of its answer r_X (capped at P) */
byte ya = NONE;  /* a t_X (age) an answered Y proved, waiting for an M */
byte la = NONE;  /* the send time (age) of the latest answered request, on
                    any connection: a reconnect's candidate */

/* the leader L */
bool lead = 1;
byte le = T;   /* L's expiry of the session, as time left; 0: due */
bool closing;  /* L has begun closing the session ... */
bool cpend;    /* ... and its closeSession waits for a quorum */
byte lw;       /* a write waiting for a quorum: 0, ON_L or ON_F (whose) */
byte lqage;    /* ticks since L last heard from the majority */
bool ping_due; /* a ping to F is to be queued in this tick (JITTER) */

/* the follower F (idle when the client stays on L) */
#if CLIENT_ON == ON_L
#define F_UP 0
#else
#define F_UP 1
#endif
bool fol = F_UP; /* following L */
bool touched; /* F heard from the session since its last ping reply */
byte fage;    /* ticks since F last read from L */
bool fwd;     /* a request F forwarded, or its answer, is on its way */
bool fgone;   /* F applied L's closeSession: it refuses the session */

/* the L-F connection: FIFO both ways; a direction lives until cut */
chan lf = [CAP + 2] of { mtype, bit }; /* kind, ok (+ an answer, a CLOSE) */
chan fl = [CAP] of { mtype, bit }; /* kind, touched */
bool lf_ok = F_UP;
bool fl_ok = F_UP;

/* the majority MJ, its heartbeats with L, and L2 */
bool mjL = 1; /* MJ follows L */
bool lm = 1;  /* L -> MJ link up */
bool ml = 1;  /* MJ -> L link up */
byte mjage;   /* ticks since MJ last heard from L */
bool l2;      /* MJ has elected L2 */
byte l2e;     /* L2's expiry of the session, as time left */

bool expired; /* a leader that can commit has closed the session */

#define QUORUM (lead && mjL && lm && ml)
#define PING_ROOM (len(lf) < CAP || !lf_ok) /* else the tick waits for F */
#define UP(v, cap) if :: v < cap -> v++ :: else fi
#define DOWN(v) if :: v > 0 -> v-- :: else fi
#define EMPTY(c) do :: nempty(c) -> c?_, _ :: empty(c) -> break od

/* The client's deadline moves to the candidate anchor of age a. */
#define RAISE(a) \
  if \
  :: T - a > dl -> \
     printf("@%d client: deadline @%d\n", clock, clock + T - a); \
     assert(!expired); /* a lock moved on, and the client holds it */ \
     dl = T - a; PROBE_VIA \
  :: else \
  fi

/* Probes, which spin must find violated, so that the new rule's deadline
 * is not vacuously early. With the client's deadline set by a triple, the
 * model reaches L's close at the very tick the client is told, the triple
 * through F (PROBE=1); and L2's close SLACK ticks after it (PROBE=2; the
 * least is P + SYNC: MJ heard from L when M committed, and waits SYNC). */
#ifdef PROBE
#ifndef SLACK
#define SLACK (P + SYNC)
#endif
byte via;              /* the server the deadline's triple went through */
byte told = SLACK + 1; /* ticks since the client was told (capped) */
#define PROBE_VIA via = srv; told = SLACK + 1
#define PROBE_TICK \
  if :: dl == 1 -> told = 0 :: dl == 0 -> UP(told, SLACK + 1) :: else fi
#define PROBE_CLOSE(who) \
  assert(!(PROBE == 1 && who == 1 && told == 0 && via == ON_F)); \
  assert(!(PROBE == 2 && who == 2 && told <= SLACK && via != 0))
#else
#define PROBE_VIA skip
#define PROBE_TICK skip
#define PROBE_CLOSE(who) skip
#endif

/* PROBE=3: a reconnect's candidate does move the deadline (its rule is not
 * vacuous). ya_rc: ya came from a reconnect, not from a Y. */
#if defined(PROBE) && PROBE == 3
bool ya_rc;
#define YA_FROM_RECONNECT ya_rc = 1
#define YA_FROM_Y ya_rc = 0
#define PROBE_RECONNECT_RAISE \
  assert(!(ya_rc && ya != NONE && T - ya > dl))
#else
#define YA_FROM_RECONNECT skip
#define YA_FROM_Y skip
#define PROBE_RECONNECT_RAISE skip
#endif

/* The client's connection ends: all that is bound to it is forgotten. */
#define C_END \
  srv = 0; rk = 0; rage = 0; isY = 0; isM = 0; x_t = NONE; x_r = 0; \
  ya = NONE; \
  if :: lw == ON_L -> lw = 0 :: else fi

/* The L-F connection ends: what is in flight is lost, and so is the
 * answer to a forwarded write that waits at L (it may still commit). */
#define LF_END \
  lf_ok = 0; fl_ok = 0; fwd = 0; EMPTY(lf); EMPTY(fl); \
  if :: lw == ON_F -> lw = 0 :: else fi

/* F leaves L: it drops its clients. */
#define F_LEAVES \
  fol = 0; fage = 0; touched = 0; LF_END; \
  if :: srv == ON_F -> C_END :: else fi

/* L steps down: it closes every connection, MJ's too (which MJ sees at
 * once if that direction is up). */
#define L_STEPS_DOWN \
  printf("@%d L: steps down\n", clock); \
  lead = 0; le = 0; closing = 0; cpend = 0; lw = 0; lqage = 0; ping_due = 0; \
  LF_END; \
  if :: srv == ON_L -> C_END :: else fi; \
  if :: mjL && lm -> mjage = SYNC :: else fi

/* A leader with a quorum closes the session: its locks move on. */
#define COMMITTED_CLOSE(who) \
  printf("@%d L%d: closes the session; the client (on %d: 1 L, 2 F) is told in %d\n", \
         clock, who, srv, dl); \
  assert(dl == 0); /* the client must have been told by now */ \
  PROBE_CLOSE(who); \
  expired = 1

/* An answer reaches the client (the rule's bookkeeping). age: of the
 * request; ok: it succeeded; y, mm: it was sent as a Y, as an M. */
#ifdef OLD_RULE
#define ANSWER(age, ok, y, mm) RAISE(age)
#else
#define ANSWER(age, ok, y, mm) \
  if :: ok && mm -> PROBE_RECONNECT_RAISE; RAISE(ya) :: else fi; /* the \
     anchor moves: X, Y, M; or a reconnect, M */ \
  if :: ok && y && (ya == NONE || x_t < ya) -> ya = x_t; YA_FROM_Y \
     :: else fi; \
  if :: T - age > dl -> x_t = age; x_r = 0 :: skip fi; /* it may be an X */ \
  if :: T - age > dl && (la == NONE || age < la) -> la = age :: else fi
#endif

/* The answer to the client's request in flight arrives. */
#define DELIVER(ok) \
  printf("@%d client: answer %d to %d sent @%d\n", clock, ok, rk, clock - rage); \
  ANSWER(rage, ok, isY, isM); \
  rk = 0; rage = 0; isY = 0; isM = 0

/* Whether a request of kind k sent now is a Y, an M. */
#ifdef OLD_RULE
#define IS_Y(k) 0
#define IS_M(k) 0
#else
#define IS_Y(k) (k != RD && x_t != NONE && x_r >= P) /* >= P after r_X */
#ifdef M_SYNC
#define IS_M(k) (k != RD && ya != NONE)
#else
#define IS_M(k) (k == WR && ya != NONE) /* a write after r_Y */
#endif
#endif

/* L's closeSession commits: the commit goes to F too, and L closes its own
 * client's connection. */
#define L_CLOSE_COMMITS \
  COMMITTED_CLOSE(1); cpend = 0; \
  if :: lf_ok -> lf!CLOSE, 0 :: else fi; \
  if :: srv == ON_L -> C_END :: else fi

/* ---------------------------------------------------------------- clock */
/* One tick passes once its obligation is met (the leader's ping); the
 * ages grow, and the timeouts that are due fire. */
active proctype Clock() {
  do
  :: atomic {
#ifdef JITTER
       !ping_due ->
#else
       (!lead || PING_ROOM) ->
#endif
       clock++;
       PROBE_TICK;
       DOWN(dl);
       if :: rk != 0 -> UP(rage, T) :: else fi;
       /* a candidate anchor that could no longer move the deadline is
        * dropped (both fall by one a tick, until the deadline is 0) */
       if :: x_t != NONE && T - x_t > dl + 1 -> x_t++; UP(x_r, P)
          :: x_t != NONE && T - x_t <= dl + 1 -> x_t = NONE; x_r = 0; isY = 0
          :: else fi;
       if :: ya != NONE && T - ya > dl + 1 -> ya++
          :: ya != NONE && T - ya <= dl + 1 -> ya = NONE; isM = 0
          :: else fi;
       if :: la != NONE && T - la > dl + 1 -> la++
          :: la != NONE && T - la <= dl + 1 -> la = NONE
          :: else fi;
       DOWN(le);
       DOWN(l2e);
       /* heartbeats between L and the majority, and their silences */
       if :: lead && mjL && lm -> mjage = 0
          :: !(lead && lm) && mjL -> UP(mjage, SYNC)
          :: else fi;
       if :: lead && mjL && ml -> lqage = 0
          :: lead && !(mjL && ml) -> UP(lqage, SYNC + TT + 1)
          :: else fi;
       /* F read nothing from L for syncLimit x tickTime: it leaves */
       if :: fol -> UP(fage, SYNC + 1) :: else fi;
       if
       :: fol && fage > SYNC ->
          printf("@%d F: read timeout, drops its clients\n", clock);
          F_LEAVES
       :: else
       fi;
       /* L steps down when its quorum was silent for syncLimit ticks; it
        * counts whole ticks, so up to a tickTime late: here at the latest */
       if :: lead && lqage > SYNC + TT -> L_STEPS_DOWN :: else fi;
       /* the ping loop */
#ifdef JITTER
       if :: lead -> ping_due = 1 :: else fi
#else
       if :: lead && lf_ok -> lf!PING, 0 :: else fi
#endif
     }
  od
}

/* ---------------------------------------------------------------- leader */
active proctype Leader() {
  do
#ifdef JITTER
  /* a ping to F, queued at some moment of its tick */
  :: atomic {
       ping_due && PING_ROOM ->
       if :: lf_ok -> lf!PING, 0 :: else fi;
       ping_due = 0
     }
#endif
  /* a message from F, in TCP order */
  :: atomic {
       lead && nempty(fl) ->
       fl?m, b;
       if
       :: m == PINGR -> if :: b && !closing -> le = T :: else fi /* touch */
       :: m == SYNCQ -> /* answered at once: nothing is pending */
          if :: lf_ok -> lf!SYNCA, 1 :: else -> fwd = 0 fi
       :: m == WRITEQ ->
          if
          :: closing -> /* checkSession: the session is expiring */
             if :: lf_ok -> lf!WRES, 0 :: else -> fwd = 0 fi
          :: !closing && QUORUM && lw == 0 -> /* committed */
             if :: lf_ok -> lf!WRES, 1 :: else -> fwd = 0 fi
#ifdef HEAL
          :: else -> lw = ON_F /* it waits for a quorum */
#else
          :: else -> fwd = 0 /* no quorum, and none will come: never answered */
#endif
          fi
       fi
     }
  /* the session tracker: expiry, and the closeSession it proposes (which
   * never commits without a quorum: the quorum does not come back) */
  :: atomic {
       lead && le == 0 && !closing ->
       closing = 1;
       if
       :: QUORUM -> L_CLOSE_COMMITS
       :: else -> cpend = 1 /* commits if the quorum comes back in time */
       fi
     }
#ifdef HEAL
  /* the quorum is back: what waited commits, in order */
  :: atomic {
       lead && lw != 0 && QUORUM ->
       if
       :: lw == ON_F -> if :: lf_ok -> lf!WRES, 1 :: else -> fwd = 0 fi
       :: lw == ON_L && srv == ON_L && rk != 0 -> DELIVER(1)
       :: else /* its connection is gone */
       fi;
       lw = 0
     }
  :: atomic { lead && cpend && lw == 0 && QUORUM -> L_CLOSE_COMMITS }
#endif
  /* steps down early: its tick check may come up to a tickTime sooner */
  :: atomic { lead && lqage > SYNC -> L_STEPS_DOWN }
  od
}

/* -------------------------------------------------------------- follower */
active proctype Follower() {
  do
  :: atomic {
       fol && nempty(lf) && (nfull(fl) || !fl_ok || !lf?[PING, _]) ->
       lf?m, b;
       fage = 0;
       if
       :: m == PING -> /* the reply carries the touches since the last */
          if :: fl_ok -> fl!PINGR, touched :: else fi;
          touched = 0
       :: m == CLOSE -> /* the session is gone: F closes its connection */
          fgone = 1;
          if :: srv == ON_F -> C_END :: else fi
       :: else -> /* SYNCA or WRES: the answer to a forwarded request */
          fwd = 0;
          if
          :: srv == ON_F && rk != 0 -> DELIVER(b)
          :: else /* its connection is gone */
          fi
       fi
     }
  /* leaves L for another reason (L closed the connection, a restart) */
  :: atomic { fol -> printf("@%d F: leaves L\n", clock); F_LEAVES }
  /* joins L again over a new connection, and learns what L committed */
  :: atomic {
       F_UP && !fol && lead ->
       printf("@%d F: follows L again\n", clock);
       fol = 1; lf_ok = 1; fl_ok = 1; fgone = (closing && !cpend)
     }
  od
}

/* -------------------------------------------------------------- majority */
active proctype Majority() {
  do
  /* MJ elects L2 once L was silent for syncLimit x tickTime, or later:
   * L2 starts every session's clock when it starts leading */
  :: atomic {
       mjL && mjage >= SYNC ->
       printf("@%d MJ: elects L2\n", clock);
       /* MJ's servers closed their connections to L: if that direction
        * is up, L sees it at once, and steps down at its next tick check */
       if :: lead && ml && lqage < SYNC -> lqage = SYNC :: else fi;
       mjL = 0; mjage = 0; lm = 0; ml = 0; l2 = 1; l2e = T
     }
  :: atomic { l2 && l2e == 0 && !expired -> COMMITTED_CLOSE(2) }
  od
}

/* --------------------------------------------------------------- network */
/* A cut of a direction of the L-F connection loses what is in flight and
 * ends that direction. A slow reader is the delay (up to CAP messages).
 * The L-MJ links are cut one way or both. A cut of the client's own link
 * is the client giving its connection up (see Client). */
active proctype Network() {
  do
  :: atomic { lf_ok -> printf("@%d net: L->F cut\n", clock); lf_ok = 0;
              if :: lf??[SYNCA, _] || lf??[WRES, _] -> fwd = 0 :: else fi; EMPTY(lf) }
  :: atomic { fl_ok -> printf("@%d net: F->L cut\n", clock); fl_ok = 0;
              if :: fl??[SYNCQ, _] || fl??[WRITEQ, _] -> fwd = 0 :: else fi; EMPTY(fl) }
#ifndef STABLE_MAJORITY
  :: atomic { mjL && lm -> printf("@%d net: L->MJ cut\n", clock); lm = 0 }
  :: atomic { mjL && ml -> printf("@%d net: MJ->L cut\n", clock); ml = 0 }
#endif
#ifdef HEAL
  :: atomic { mjL && !lm -> printf("@%d net: L->MJ back\n", clock); lm = 1 }
  :: atomic { mjL && !ml -> printf("@%d net: MJ->L back\n", clock); ml = 1 }
#endif
  od
}

/* A new connection: the leader has just touched the session (the client
 * connected to it, or its server had it revalidate the session), after
 * the latest answer the client had: that answer's send time is a
 * candidate that the next write on this connection proves. */
#if defined(OLD_RULE) || defined(NO_RECONNECT)
#define RECONNECTED skip
#elif defined(RECONNECT_ANY)
#define RECONNECTED if :: la != NONE -> RAISE(la) :: else fi
#else
#define RECONNECTED ya = la; YA_FROM_RECONNECT
#endif

/* ---------------------------------------------------------------- client */
/* Requests and answers cross the client's own link at once: a delay there
 * only makes t earlier than the touch, or r later (both safe). */
active proctype Client() {
  do
  /* connects, over a new connection, to L or to F while they serve */
#if !defined(CLIENT_ON) || CLIENT_ON == ON_L
  :: atomic { srv == 0 && lead && !closing -> /* L touches the session */
              srv = ON_L; le = T; printf("@%d client: connects to L\n", clock);
              RECONNECTED }
#endif
#if !defined(CLIENT_ON) || CLIENT_ON == ON_F
  /* F has L revalidate the session (a round trip, here at once: L
   * touches it) before it takes the connection */
  :: atomic { srv == 0 && fol && !fgone && !fwd && /* old answers gone */
              lead && !closing && lf_ok && fl_ok ->
              srv = ON_F; le = T; printf("@%d client: connects to F\n", clock);
              RECONNECTED }
#endif
  /* a request to L: touched, answered at once */
  :: atomic {
       srv == ON_L && rk == 0 ->
       if :: k = RD :: k = SY :: lw == 0 -> k = WR fi;
       printf("@%d client: sends %d to L (1 read, 2 sync, 3 write)\n", clock, k);
       if
       :: closing -> C_END /* touchSession fails: L closes the connection */
       :: !closing && (k != WR || QUORUM) ->
          le = T; /* touchSession */
          printf("@%d client: answer 1\n", clock);
          ANSWER(0, 1, IS_Y(k), IS_M(k))
       :: else -> /* a write without a quorum waits for one */
          le = T;
#ifdef HEAL
          rk = WR; rage = 0; isY = IS_Y(k); isM = IS_M(k); lw = ON_L
#else
          C_END /* none will come: the client gives up */
#endif
       fi
     }
  /* a request to F: touched; a read answered from F's state, a sync or a
   * write forwarded to L */
  :: atomic {
       srv == ON_F && rk == 0 && !fwd ->
       if
       :: k = RD
       :: nfull(fl) || !fl_ok -> k = SY
       :: nfull(fl) || !fl_ok -> k = WR
       fi;
       printf("@%d client: sends %d to F (1 read, 2 sync, 3 write)\n", clock, k);
       touched = 1;
       if
       :: k == RD -> printf("@%d client: answer 1\n", clock); ANSWER(0, 1, 0, 0)
       :: else ->
          rk = k; rage = 0; isY = IS_Y(k); isM = IS_M(k);
          if :: fl_ok -> fl!(k == SY -> SYNCQ : WRITEQ), 0; fwd = 1
             :: else fi
       fi
     }
  /* gives the connection up: its time-out, a cut of its link, any other
   * reason; a request in flight is lost */
  :: atomic { srv != 0 -> printf("@%d client: disconnects\n", clock); C_END }
  od
}
