/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debug.c - what the tests look at inside a session: counts of what it
 * still holds, and bounded waits for it to settle. Not exported.
 */
#include "config.h"

#include <string.h>

#include "internal.h"

unsigned zkl__debug_sessions_alive(void) {
  return __atomic_load_n(&zkl__sessions_alive, __ATOMIC_RELAXED);
}

static unsigned calls_queued_locked(const zkl_session *s) {
  const zkl_call *c;
  unsigned n = 0;
  for (c = s->calls; c; c = c->next)
    n++;
  return n;
}

/* Requests in flight but the lease's beats: the session keeps them going
 * for as long as it lives (lease.c); they are no leftover of a lock. */
static unsigned inflight_locked(const zkl_session *s) {
  return s->inflight - s->lease.requests;
}

void zkl__debug_counts(zkl_session *s, zkl_debug_counts *out) {
  pthread_mutex_lock(&s->mu);
  out->watches = zkl__watches_count_locked(s);
  out->cleanups = zkl__cleanups_count_locked(s);
  out->inflight = inflight_locked(s);
  out->parked = zkl__engine_suspended_locked(s);
  out->calls = calls_queued_locked(s);
  memcpy(out->sent, s->sent, sizeof out->sent);
  pthread_mutex_unlock(&s->mu);
}

static int wait_still(zkl_session *s, bool watches_too, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  int rc = -1;
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if ((!watches_too || zkl__watches_count_locked(s) == 0) &&
        zkl__cleanups_count_locked(s) == 0 &&
        zkl__engine_suspended_locked(s) == 0 && inflight_locked(s) == 0 &&
        s->busy == 0 && !s->calls) {
      rc = 0;
      break;
    }
    if (zkl__now_ms() >= deadline)
      break;
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int zkl__debug_wait_quiet(zkl_session *s, int timeout_ms) {
  return wait_still(s, true, timeout_ms);
}

int zkl__debug_wait_settled(zkl_session *s, int timeout_ms) {
  return wait_still(s, false, timeout_ms);
}

void zkl__debug_lease(zkl_session *s, zkl_debug_lease *out) {
  pthread_mutex_lock(&s->mu);
  out->timeout_ms = s->negotiated_timeout_ms;
  out->margin_ms = zkl__lease_margin_ms(s);
  out->ping_bound_ms = zkl__lease_ping_bound_ms(s);
  out->full_ms = out->timeout_ms - out->margin_ms - out->ping_bound_ms;
  out->left_ms = zkl__lease_left_locked(s, zkl__now_ms());
  out->proofs = s->lease.proofs;
  pthread_mutex_unlock(&s->mu);
}

int zkl__debug_wait_connected(zkl_session *s, bool want, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  bool now;
  pthread_mutex_lock(&s->mu);
  while (s->connected != want && !s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  now = s->connected;
  pthread_mutex_unlock(&s->mu);
  return now == want ? 0 : -1;
}

int zkl__debug_wait_dead(zkl_session *s, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  int dead;
  pthread_mutex_lock(&s->mu);
  while (!s->dead && zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  dead = s->dead;
  pthread_mutex_unlock(&s->mu);
  return dead;
}

int zkl__debug_wait_suspended(zkl_session *s, unsigned want, int timeout_ms) {
  int64_t deadline = zkl__now_ms() + timeout_ms;
  unsigned now;
  pthread_mutex_lock(&s->mu);
  while ((now = zkl__engine_suspended_locked(s)) != want &&
         zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
  pthread_mutex_unlock(&s->mu);
  return now == want ? 0 : -1;
}
