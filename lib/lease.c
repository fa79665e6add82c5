/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease.c - the lease: how long a holder may still trust its locks when it
 * hears nothing from ZooKeeper, counted only from what the leader heard.
 *
 * Only the leader expires sessions, and a follower's answer is not the
 * leader's: a follower answers reads (and the client's pings) from its own
 * state and reports the sessions it heard from only in its replies to the
 * leader's pings; cut off from the leader, it goes on answering for up to
 * syncLimit x tickTime while the leader expires those sessions after T. And
 * a leader cut off into a minority answers until it steps down, while the
 * majority may already have elected another. So an answer proves nothing
 * by itself. What does (docs/correctness.md has the argument, and
 * docs/lease.pml the model spin checks):
 *
 *   On one connection, X any answered request (its server touched the
 *   session when X arrived, at or after X's send time); then Y, a sync or a
 *   write (forwarded to the leader), sent at least P after X's answer and
 *   answered; then M, a write sent after Y's answer, that succeeded. Then
 *   the leader touched the session at or after X was sent (it pinged the
 *   follower within P, and the reply carrying the touch went to it before
 *   M, on one TCP stream), M's commit proves that it had a quorum, so no
 *   later leader started counting before that either: the session lives
 *   until X's send time + T at least. That time is the anchor.
 *
 * P is the longest a leader goes between two pings of a learner: half its
 * tickTime and a little. The client cannot read tickTime; ZooKeeper never
 * grants a session shorter than minSessionTimeout, 2 x tickTime unless the
 * servers say otherwise, so tickTime <= T/2 is assumed unless the user
 * gives a bound (zkl_session_set_server_tick()).
 *
 * A new session has a proof of its own: its creation is a write through the
 * leader, which starts its clock then, so the anchor is the moment it began
 * opening. So has a reconnect: the server revalidates the session with the
 * leader, which touches it, before it answers the handshake; the handshake
 * went out after the old connection's last answer came, so a write sent
 * after the reconnect that succeeds proves the send time of that answer's
 * request (the leader touched the session later, and had a quorum).
 *
 * The beats: a sync every P/2 (so that a Y with an X answered P before it
 * is always at hand), or every T/8 when P is small (tickTime given: no
 * need to renew faster than the default lease does), and, while a lock is
 * held or a grant waits for a fresher lease, a write right after each (a check of "/" in a
 * transaction: committed, changes nothing). Every write of the locks
 * themselves (creates, deletes, transactions) is an M too, so acquiring
 * costs no round trip more. Held locks are declared lost at anchor + T -
 * margin, before the leader can expire the session, so before anyone else
 * can be granted them.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "agent.h"

/* ---------------------------------------------------------- the numbers */

int zkl__lease_margin_ms(const zkl_session *s) {
  int t = s->negotiated_timeout_ms, m;
  if (s->lease.margin_ms != 0)
    return s->lease.margin_ms; /* the user's; -1: lease off */
  m = t / 10;
  if (m < 100)
    m = 100;
  if (m > 2000)
    m = 2000;
  return m;
}

/* P for a tick (0: T/2). The leader's loop waits half a tick, then pings
 * every learner: its own work (a quorum check, the pings) comes on top, a
 * millisecond or two; a tenth of the half tick covers that and a busy
 * server. */
static int ping_bound(int timeout_ms, int tick_ms) {
  int tick = tick_ms > 0 ? tick_ms : timeout_ms / 2;
  return tick / 2 + tick / 20 + 1;
}

int zkl__lease_ping_bound_ms(const zkl_session *s) {
  return ping_bound(s->negotiated_timeout_ms, s->lease.tick_ms);
}

/* Whether a margin (> 0) and a tick leave any lease: a proof leaves
 * T - margin - P at most. */
static bool lease_possible(int timeout_ms, int margin_ms, int tick_ms) {
  return timeout_ms <= 0 ||
         margin_ms < timeout_ms - ping_bound(timeout_ms, tick_ms);
}

/* What a fresh proof leaves at best: the anchor is at least P old when it
 * is proven. */
static int full_lease_ms(const zkl_session *s) {
  return s->negotiated_timeout_ms - zkl__lease_margin_ms(s) -
         zkl__lease_ping_bound_ms(s);
}

/* The instant (monotonic ms) before which the session is surely alive on
 * the leader, minus the margin; 0 when the lease is off or nothing is
 * proven. */
static int64_t deadline_locked(const zkl_session *s) {
  int margin = zkl__lease_margin_ms(s);
  if (margin < 0 || s->negotiated_timeout_ms <= 0 || s->lease.anchor_ms == 0)
    return 0;
  return s->lease.anchor_ms + s->negotiated_timeout_ms - margin;
}

int64_t zkl__lease_expiry_locked(const zkl_session *s) {
  int64_t deadline = deadline_locked(s);
  return deadline == 0 ? 0 : deadline + zkl__lease_margin_ms(s);
}

bool zkl__lease_expired_locked(const zkl_session *s, int64_t now_ms) {
  int64_t deadline = deadline_locked(s);
  if (zkl__lease_margin_ms(s) < 0)
    return false;
  return deadline == 0 || now_ms >= deadline;
}

bool zkl__lease_fresh_locked(const zkl_session *s, int64_t now_ms) {
  int64_t deadline = deadline_locked(s);
  if (zkl__lease_margin_ms(s) < 0)
    return true;
  return deadline != 0 && deadline > now_ms &&
         deadline - now_ms >= full_lease_ms(s) / 2;
}

int64_t zkl__lease_left_locked(const zkl_session *s, int64_t now_ms) {
  int64_t deadline = deadline_locked(s);
  return deadline == 0 ? 0 : deadline - now_ms;
}

/* -------------------------------------------------------- the evidence */

/* Everything a connection proved goes with it: a chain never spans two. */
static void forget_connection_locked(zkl_session *s) {
  s->lease.conn++;
  s->lease.nbeats = 0;
  s->lease.ncands = 0;
  s->lease.beat_inflight = false; /* its answer belongs to the old one */
}

void zkl__lease_connected_locked(zkl_session *s, bool new_session) {
  int64_t now = zkl__now_ms();
  forget_connection_locked(s);
  s->lease.next_beat_ms = now; /* the first X, at once */
  if (new_session && s->lease.opened_ms > s->lease.anchor_ms) {
    s->lease.anchor_ms = s->lease.opened_ms;
  } else if (!new_session && s->lease.answered_ms > s->lease.anchor_ms) {
    /* the reconnect's own candidate: the next write proves it */
    s->lease.cands[0].anchor_ms = s->lease.answered_ms;
    s->lease.cands[0].after_ms = now;
    s->lease.ncands = 1;
  }
  zkl__timer_kick_locked(&s->timer);
}

void zkl__lease_disconnected_locked(zkl_session *s) {
  forget_connection_locked(s);
}

void zkl__lease_moving_locked(zkl_session *s, bool moving) {
  forget_connection_locked(s);
  s->lease.moving = moving;
  if (!moving) {
    s->lease.next_beat_ms = zkl__now_ms();
    zkl__timer_kick_locked(&s->timer);
  }
}

void zkl__lease_tag_locked(zkl_session *s, zkl_req *r, int proof) {
  r->conn = s->lease.moving ? 0 : s->lease.conn;
  r->proof = proof;
}

static bool on_this_connection(const zkl_session *s, const zkl_req *r) {
  return r->conn != 0 && r->conn == s->lease.conn && !s->lease.moving &&
         s->connected;
}

/* An answered beat: a possible X for a later Y. */
static void remember_beat_locked(zkl_session *s, int64_t sent, int64_t at) {
  zkl_lease *le = &s->lease;
  if (le->nbeats == ZKL_LEASE_BEATS) {
    memmove(&le->beats[0], &le->beats[1],
            (ZKL_LEASE_BEATS - 1) * sizeof le->beats[0]);
    le->nbeats--;
  }
  le->beats[le->nbeats].sent_ms = sent;
  le->beats[le->nbeats].answered_ms = at;
  le->nbeats++;
}

/* Y was sent at y_sent and answered at `at`: the newest X answered P
 * before y_sent makes a candidate, which the next write proves. */
static void forwarded_answered_locked(zkl_session *s, int64_t y_sent,
                                      int64_t at) {
  zkl_lease *le = &s->lease;
  int64_t bound = y_sent - zkl__lease_ping_bound_ms(s);
  unsigned i = le->nbeats;
  while (i > 0 && le->beats[i - 1].answered_ms > bound)
    i--;
  if (i == 0)
    return;
  if (le->ncands > 0 &&
      le->cands[le->ncands - 1].anchor_ms >= le->beats[i - 1].sent_ms)
    return; /* nothing newer */
  if (le->ncands == ZKL_LEASE_CANDS) {
    memmove(&le->cands[0], &le->cands[1],
            (ZKL_LEASE_CANDS - 1) * sizeof le->cands[0]);
    le->ncands--;
  }
  le->cands[le->ncands].anchor_ms = le->beats[i - 1].sent_ms;
  le->cands[le->ncands].after_ms = at;
  le->ncands++;
}

/* Everything but the client's own verdicts (a lost connection, a closing or
 * dead handle) is an answer from the server. */
static bool server_answered(int rc) {
  return rc == ZOK || (rc <= ZAPIERROR && rc != ZSESSIONEXPIRED &&
                       rc != ZCLOSING && rc != ZSESSIONMOVED &&
                       rc != ZAUTHFAILED);
}

static void answered_locked(zkl_session *s, zkl_req *r, int rc) {
  zkl_lease *le = &s->lease;
  unsigned i, proven = 0;
  int64_t anchor = 0;
  if (server_answered(rc) && r->sent_ms > le->answered_ms)
    le->answered_ms = r->sent_ms;
  if (rc != ZOK || r->proof != ZKL_PROOF_WRITE || !on_this_connection(s, r))
    return;
  /* M: every candidate whose Y was answered before M was sent. */
  for (i = 0; i < le->ncands; i++)
    if (le->cands[i].after_ms <= r->sent_ms) {
      proven = i + 1;
      anchor = le->cands[i].anchor_ms;
    }
  if (proven == 0)
    return;
  memmove(&le->cands[0], &le->cands[proven],
          (le->ncands - proven) * sizeof le->cands[0]);
  le->ncands -= proven;
  if (anchor <= le->anchor_ms)
    return;
  le->anchor_ms = anchor;
  le->proofs++;
  /* A grant waiting for a fresher lease may go now. (A later deadline
   * needs nobody woken: the timer looks again at the earlier one.) */
  if (le->confirming > 0)
    zkl__timer_kick_locked(&s->timer);
}

void zkl__lease_attach(zkl_session *s) { s->answer_seen_locked = answered_locked; }

/* ------------------------------------------------------------ the beats */

typedef struct beat_write {
  zoo_op_t op;
  zoo_op_result_t result;
} beat_write;

static void send_sync_locked(zkl_session *s);

/* With P/2 the lease never falls below T - margin - 1.5 P; with a gap g of
 * P or more, below T - margin - 2g: T/8 keeps that above 0.65 T. */
static int beat_gap_ms(const zkl_session *s) {
  int half_p = zkl__lease_ping_bound_ms(s) / 2,
      eighth = s->negotiated_timeout_ms / 8;
  return half_p > eighth ? half_p : eighth;
}

static bool writes_wanted(const zkl_session *s) {
  return s->lease.held > 0 || s->lease.confirming > 0;
}

/* A candidate is ready that a write would prove, newer than the anchor. */
static bool candidate_ready(const zkl_session *s) {
  return s->lease.ncands > 0 &&
         s->lease.cands[s->lease.ncands - 1].anchor_ms > s->lease.anchor_ms;
}

static void beat_over_locked(zkl_session *s, int64_t at) {
  s->lease.beat_inflight = false;
  s->lease.next_beat_ms = at + beat_gap_ms(s);
  zkl__timer_kick_at_locked(&s->timer, s->lease.next_beat_ms);
}

/* The write's proof is the frame's (answered_locked): here it
 * is only an X for later, and the end of the beat. */
static void write_done_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  int64_t now = zkl__now_ms();
  free(r->item);
  s->lease.requests--;
  if (r->conn != s->lease.conn)
    return; /* a beat of a connection gone */
  if (a->rc == ZOK && on_this_connection(s, r)) {
    remember_beat_locked(s, r->sent_ms, now);
  } else if (a->rc != ZOK && !zkl__is_connection_loss(a->rc) &&
             !zkl__is_session_over(a->rc)) {
    /* Refused (an ACL on "/", say): it will be again. The candidates wait
     * for a write of the locks; the beats make new ones. */
    s->lease.ncands = 0;
    if (!s->lease.told_refused)
      zkl__log("the lease's write (a check of \"/\") was refused: %s; only "
               "the locks' own writes renew the lease",
               zerror(a->rc));
    s->lease.told_refused = true;
  }
  beat_over_locked(s, now);
}

static void send_write_locked(zkl_session *s) {
  beat_write *w = calloc(1, sizeof *w);
  zkl_req *r;
  int rc;
  if (!w)
    return;
  if (!(r = zkl__req_new_locked(s, ZKL_RQ_LEASE_WRITE))) {
    free(w);
    return;
  }
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  r->answered_locked = write_done_locked;
  r->item = w;
  zoo_check_op_init(&w->op, "/", -1);
  rc = zkl__safe_amulti(s->zh, 1, &w->op, &w->result, zkl__on_void, r);
  if (rc != ZOK) {
    free(w);
    zkl__req_abort_locked(r);
    return;
  }
  s->lease.beat_inflight = true;
  s->lease.requests++;
}

static void sync_done_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  int64_t now = zkl__now_ms();
  s->lease.requests--;
  if (r->conn != s->lease.conn)
    return; /* a beat of a connection gone */
  s->lease.beat_inflight = false;
  if (a->rc != ZOK || !on_this_connection(s, r)) {
    beat_over_locked(s, now);
    return;
  }
  forwarded_answered_locked(s, r->sent_ms, now);
  remember_beat_locked(s, r->sent_ms, now);
  if (writes_wanted(s) && candidate_ready(s)) {
    send_write_locked(s);
    if (s->lease.beat_inflight)
      return;
  }
  beat_over_locked(s, now);
}

static void send_sync_locked(zkl_session *s) {
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_LEASE_SYNC);
  if (!r)
    return; /* tried again at the next tick */
  zkl__lease_tag_locked(s, r, ZKL_PROOF_FORWARDED);
  r->answered_locked = sync_done_locked;
  if (zoo_async(s->zh, "/", zkl__on_value, r) != ZOK) {
    zkl__req_abort_locked(r);
    return;
  }
  s->lease.beat_inflight = true;
  s->lease.requests++;
}

/* --------------------------------------------------------- the holders */

/* Only the first hold needs the clock: its deadline (a timer that looks
 * by then anyway, at the next beat, is not woken; waking it at every grant
 * and release cost an uncontended cycle 12% more CPU). Writes follow the
 * next sync by themselves. */
void zkl__lease_hold_locked(zkl_session *s, int delta) {
  int64_t deadline;
  if (delta > 0 && s->lease.held++ == 0 && (deadline = deadline_locked(s)))
    zkl__timer_kick_at_locked(&s->timer, deadline);
  else if (delta < 0)
    s->lease.held--;
}

/* A grant that waits wants a write at once, if a candidate is at hand. */
void zkl__lease_confirming_locked(zkl_session *s, int delta) {
  if (delta > 0 && s->lease.confirming++ == 0)
    zkl__timer_kick_locked(&s->timer);
  else if (delta < 0)
    s->lease.confirming--;
}

static void declare_lost_locked(zkl_session *s, zkl_call **notices) {
  if (s->hooks && s->hooks->lease_lost_locked)
    s->hooks->lease_lost_locked(s->hooks_ctx, notices);
}

bool zkl__lease_enforce_locked(zkl_session *s) {
  zkl_call *notices = NULL, **tail;
  if (s->lease.held == 0 || s->dead || zkl__lease_margin_ms(s) < 0 ||
      !zkl__lease_expired_locked(s, zkl__now_ms()))
    return false;
  zkl__log("lease expired (found by a call): declaring %u lock(s) lost",
           s->lease.held);
  declare_lost_locked(s, &notices);
  /* The caller is a user's thread that may hold its own locks: the
   * notices run on the timer thread, as every lease notice does. */
  for (tail = &s->lease.notices; *tail; tail = &(*tail)->next)
    ;
  *tail = notices;
  zkl__timer_kick_locked(&s->timer);
  return true;
}

zkl_call *zkl__lease_take_notices_locked(zkl_session *s) {
  zkl_call *list = s->lease.notices;
  s->lease.notices = NULL;
  return list;
}

int64_t zkl__lease_tick_locked(zkl_session *s, int64_t now,
                               zkl_call **direct) {
  int64_t deadline, next = 0;
  if (s->dead || s->closing || zkl__lease_margin_ms(s) < 0)
    return 0;
  deadline = deadline_locked(s);
  if (s->lease.held > 0) {
    if (deadline == 0 || now >= deadline) {
      zkl__log("lease expired: the leader may not have heard of the session "
               "for %lld ms of a %d ms session; declaring %u lock(s) lost",
               deadline == 0 ? -1LL
                             : (long long)(now - s->lease.anchor_ms),
               s->negotiated_timeout_ms, s->lease.held);
      declare_lost_locked(s, direct);
    } else {
      next = deadline;
    }
  }
  if (s->connected && !s->lease.moving && !s->lease.beat_inflight) {
    /* A holder, or a grant waiting for a fresher lease, needs a write now
     * if a candidate is ready (after a reconnect, say); otherwise the
     * beats make one. */
    if (writes_wanted(s) && candidate_ready(s))
      send_write_locked(s);
    else if (now >= s->lease.next_beat_ms)
      send_sync_locked(s);
    if (!s->lease.beat_inflight && (next == 0 || s->lease.next_beat_ms < next))
      next = now >= s->lease.next_beat_ms ? now + beat_gap_ms(s)
                                          : s->lease.next_beat_ms;
  }
  return next;
}

/* ------------------------------------------------------------ the calls */

int zkl__lease_fits_locked(const zkl_session *s) {
  if (s->lease.margin_ms > 0 &&
      !lease_possible(s->negotiated_timeout_ms, s->lease.margin_ms,
                      s->lease.tick_ms))
    return ZKL_EINVAL;
  return ZKL_OK;
}

int zkl_session_set_lease_margin(zkl_session *s, int margin_ms) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_unsupported("zkl_session_set_lease_margin");
  int rc = ZKL_OK;
  if (!s)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->closing)
    rc = ZKL_ECLOSED;
  else if (margin_ms > 0 && !lease_possible(s->negotiated_timeout_ms,
                                            margin_ms, s->lease.tick_ms))
    rc = ZKL_EINVAL; /* the lease would run out before it began */
  else
    s->lease.margin_ms = margin_ms < 0 ? -1 : margin_ms;
  zkl__timer_kick_locked(&s->timer);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl_session_set_server_tick(zkl_session *s, int tick_ms) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_unsupported("zkl_session_set_server_tick");
  int rc = ZKL_OK;
  if (!s || tick_ms < 0)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->closing)
    rc = ZKL_ECLOSED;
  else if (s->lease.margin_ms > 0 &&
           !lease_possible(s->negotiated_timeout_ms, s->lease.margin_ms,
                           tick_ms))
    rc = ZKL_EINVAL;
  else
    s->lease.tick_ms = tick_ms;
  zkl__timer_kick_locked(&s->timer);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int64_t zkl_session_lease_deadline(const zkl_session *cs) {
  if (cs && ZKL_REMOTE_SESSION(cs))
    return zkl__remote_lease_deadline(cs);
  zkl_session *s = (zkl_session *)cs; /* for s->mu only */
  int64_t deadline = 0;
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  if (s->lease.held > 0 && !s->dead)
    deadline = deadline_locked(s);
  pthread_mutex_unlock(&s->mu);
  return deadline;
}
