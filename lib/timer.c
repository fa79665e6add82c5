/*
 * timer.c - one thread per session that fails acquires whose deadline has
 * passed. It sleeps on a monotonic condition variable until the earliest
 * deadline; starting an acquire with an earlier deadline wakes it. No thread
 * per lock, no polling.
 */
#include "config.h"

#include "internal.h"

static void *timer_main(void *arg) {
  zkl_session *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->timer_stop) {
    int64_t now = zkl__now_ms();
    int64_t next = zkl__locks_expire_locked(s, now);
    s->timer_next_ms = next;
    if (next == 0)
      pthread_cond_wait(&s->timer_cond, &s->mu);
    else
      zkl__cond_wait_until(&s->timer_cond, &s->mu, next);
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

void zkl__timer_kick_locked(zkl_session *s, int64_t deadline_ms) {
  if (s->timer_next_ms == 0 || deadline_ms < s->timer_next_ms) {
    s->timer_next_ms = deadline_ms;
    pthread_cond_signal(&s->timer_cond);
  }
}
