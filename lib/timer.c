/*
 * timer.c - one thread per session for everything that happens by the clock:
 * acquire deadlines, heartbeats and the lease. It sleeps on a monotonic
 * condition variable until the earliest of them and is kicked when one
 * moves earlier. No thread per lock, no polling.
 *
 * It also runs the lost notices of an expired lease itself: the completion
 * thread cannot be relied on then (it may be stuck behind a connection
 * attempt to an unreachable server).
 */
#include "config.h"

#include "internal.h"

static int64_t earliest(int64_t a, int64_t b) {
  if (a == 0)
    return b;
  if (b == 0)
    return a;
  return a < b ? a : b;
}

static void *timer_main(void *arg) {
  zkl_session *s = arg;
  /* Blocking calls from a lost callback run here would stall every
   * deadline of the session, and an acquire would wait for this very
   * thread: refuse them as on a completion thread. */
  zkl__mark_zk_thread();
  pthread_mutex_lock(&s->mu);
  while (!s->timer_stop) {
    int64_t now = zkl__now_ms(), next;
    zkl_call *notices = NULL;
    next = zkl__locks_expire_locked(s, now);
    next = earliest(next, zkl__lease_tick_locked(s, now, &notices));
    if (s->lease_calls) { /* found by a user's call meanwhile */
      zkl_call **tail = &notices;
      while (*tail)
        tail = &(*tail)->next;
      *tail = s->lease_calls;
      s->lease_calls = NULL;
    }
    if (notices) {
      zkl__run_calls_locked(s, notices);
      continue; /* time passed while they ran */
    }
    if (next == 0)
      pthread_cond_wait(&s->timer_cond, &s->mu);
    else
      zkl__cond_wait_until(&s->timer_cond, &s->mu, next);
  }
  if (s->lease_calls) { /* closing: every callback runs before close ends */
    zkl_call *notices = s->lease_calls;
    s->lease_calls = NULL;
    zkl__run_calls_locked(s, notices);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

int zkl__timer_start(zkl_session *s) {
  if (pthread_create(&s->timer, NULL, timer_main, s) != 0)
    return ZKL_ESYSTEM;
  s->timer_running = true;
  return ZKL_OK;
}

void zkl__timer_stop(zkl_session *s) {
  if (!s->timer_running)
    return;
  pthread_mutex_lock(&s->mu);
  s->timer_stop = true;
  pthread_cond_signal(&s->timer_cond);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->timer, NULL);
  s->timer_running = false;
}

void zkl__timer_kick_locked(zkl_session *s) {
  pthread_cond_signal(&s->timer_cond);
}
