/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lease.c - the lease: how long a holder may still trust its locks when it
 * hears nothing from ZooKeeper.
 *
 * A server expires a session T ms (the negotiated timeout) after it last
 * heard from it, and then grants its locks to the next waiters. A client cut
 * off from every server hears nothing, not even that. What it does know: a
 * request it sent at time t and that the server answered reached the server
 * at t or later, so the session lives on the server until t + T at least
 * (the server's tick rounding only adds to that). The session keeps the send
 * time of the latest answered request (last_answer_ms, session.c), and every
 * held lock is declared lost at that time + T - margin: before anyone else
 * can be granted it. While locks are held a cheap read goes out every T/6
 * so that an idle holder's lease keeps moving; the client's own pings are
 * invisible to us. If the connection comes back in time, the next answer
 * renews the lease and nothing is reported.
 */
#include "config.h"

#include "session.h"

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

/* The instant (monotonic ms) before which the session is surely alive on
 * the server, minus the margin; 0 when the lease is off or unknown. */
static int64_t deadline_locked(const zkl_session *s) {
  int margin = zkl__lease_margin_ms(s);
  if (margin < 0 || s->negotiated_timeout_ms <= 0 || s->last_answer_ms == 0)
    return 0;
  return s->last_answer_ms + s->negotiated_timeout_ms - margin;
}

bool zkl__lease_expired_locked(const zkl_session *s, int64_t now_ms) {
  int64_t deadline = deadline_locked(s);
  if (zkl__lease_margin_ms(s) < 0)
    return false;
  return deadline == 0 || now_ms >= deadline;
}

bool zkl__lease_fresh_locked(const zkl_session *s, int64_t now_ms) {
  int margin = zkl__lease_margin_ms(s);
  int64_t deadline = deadline_locked(s);
  if (margin < 0)
    return true;
  return deadline != 0 &&
         deadline - now_ms >= (s->negotiated_timeout_ms - margin) / 2;
}

void zkl__lease_hold_locked(zkl_session *s, int delta) {
  if (delta > 0 && s->lease.held++ == 0)
    /* heartbeats, and the clock: the first is due T/6 after the latest
     * answer (a timer that plans to look by then need not be woken) */
    zkl__timer_kick_at_locked(
        &s->timer, s->last_answer_ms + s->negotiated_timeout_ms / 6);
  else if (delta < 0)
    s->lease.held--;
}

/* The answer has renewed the lease already (the frame moves its clock). */
static void heartbeat_done_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  (void)a;
  s->lease.heartbeat_inflight = false;
  zkl__timer_kick_locked(&s->timer);
}

static void send_heartbeat_locked(zkl_session *s) {
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_HEARTBEAT);
  if (!r)
    return; /* tried again at the next tick */
  r->answered_locked = heartbeat_done_locked;
  if (zoo_aexists(s->zh, "/", 0, zkl__on_stat, r) != ZOK) {
    zkl__req_abort_locked(r);
    return;
  }
  s->lease.heartbeat_inflight = true;
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
  int64_t deadline, next, beat;
  if (s->lease.held == 0 || s->dead || s->closing ||
      zkl__lease_margin_ms(s) < 0)
    return 0;
  deadline = deadline_locked(s);
  if (deadline != 0 && now >= deadline) {
    zkl__log("lease expired: nothing heard from the server for %lld ms of a "
             "%d ms session; declaring %u lock(s) lost",
             (long long)(now - s->last_answer_ms), s->negotiated_timeout_ms,
             s->lease.held);
    declare_lost_locked(s, direct);
    return 0;
  }
  next = deadline;
  if (s->connected && !s->lease.heartbeat_inflight) {
    beat = s->last_answer_ms + s->negotiated_timeout_ms / 6;
    if (now >= beat)
      send_heartbeat_locked(s);
    else if (beat < next)
      next = beat;
  }
  return next;
}

int zkl_session_set_lease_margin(zkl_session *s, int margin_ms) {
  int rc = ZKL_OK;
  if (!s)
    return ZKL_EINVAL;
  pthread_mutex_lock(&s->mu);
  if (s->closing)
    rc = ZKL_ECLOSED;
  else if (margin_ms > 0 && s->negotiated_timeout_ms > 0 &&
           margin_ms >= s->negotiated_timeout_ms)
    rc = ZKL_EINVAL; /* the lease would run out before it began */
  else
    s->lease.margin_ms = margin_ms < 0 ? -1 : margin_ms;
  zkl__timer_kick_locked(&s->timer);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int64_t zkl_session_lease_deadline(zkl_session *s) {
  int64_t deadline = 0;
  if (!s)
    return 0;
  pthread_mutex_lock(&s->mu);
  if (s->lease.held > 0 && !s->dead)
    deadline = deadline_locked(s);
  pthread_mutex_unlock(&s->mu);
  return deadline;
}
