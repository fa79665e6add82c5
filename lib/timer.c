/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timer.c - one thread that calls one tick function by the clock. The tick
 * does the work (acquire deadlines, heartbeats, the lease: see events.c)
 * and says when to call it again; the thread sleeps on a monotonic
 * condition variable until then, or until kicked because a deadline moved
 * earlier. No thread per lock, no polling.
 */
#include "config.h"

#include "session.h"

static void *timer_main(void *arg) {
  zkl_timer *t = arg;
  /* A blocking call from a callback run here (a lost notice) would stall
   * every deadline of the session: refuse them as on a completion
   * thread. */
  zkl__mark_zk_thread();
  pthread_mutex_lock(t->mu);
  while (!t->stop) {
    int64_t next = t->tick_locked(t->ctx, zkl__now_ms());
    if (t->stop)
      break;
    t->wake_ms = next; /* kicks for later than this need not wake it */
    if (next == 0)
      pthread_cond_wait(&t->cond, t->mu);
    else if (next > zkl__now_ms())
      zkl__cond_wait_until(&t->cond, t->mu, next);
    t->wake_ms = -1; /* awake: about to look at everything */
  }
  pthread_mutex_unlock(t->mu);
  return NULL;
}

int zkl__timer_start(zkl_timer *t, pthread_mutex_t *mu,
                     int64_t (*tick_locked)(void *ctx, int64_t now),
                     void *ctx) {
  if (zkl__cond_init(&t->cond) != ZKL_OK)
    return ZKL_ESYSTEM;
  t->mu = mu;
  t->tick_locked = tick_locked;
  t->ctx = ctx;
  t->stop = false;
  t->wake_ms = -1;
  if (pthread_create(&t->thread, NULL, timer_main, t) != 0) {
    pthread_cond_destroy(&t->cond);
    return ZKL_ESYSTEM;
  }
  t->running = true;
  return ZKL_OK;
}

void zkl__timer_stop(zkl_timer *t) {
  if (!t->running)
    return;
  pthread_mutex_lock(t->mu);
  t->stop = true;
  pthread_cond_signal(&t->cond);
  pthread_mutex_unlock(t->mu);
  pthread_join(t->thread, NULL);
  pthread_cond_destroy(&t->cond);
  t->running = false;
}

void zkl__timer_kick_locked(zkl_timer *t) {
  if (t->running)
    pthread_cond_signal(&t->cond);
}

void zkl__timer_kick_at_locked(zkl_timer *t, int64_t due) {
  /* Asleep until `due` or earlier already (or awake: it looks at
   * everything before it sleeps again): nothing to do. Waking it costs a
   * context switch per lock cycle otherwise. */
  if (t->wake_ms < 0 || (t->wake_ms > 0 && t->wake_ms <= due))
    return;
  zkl__timer_kick_locked(t);
}
