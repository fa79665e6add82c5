/*
 * blocking.c - the blocking face: each call starts the async core with a
 * waiter as its target and sleeps on the waiter's condition variable until
 * the core decides. There is no second state machine and no timer here: the
 * core's own deadline ends a timed acquire.
 */
#include "config.h"

#include "internal.h"

static int wait_for(zkl_session *s, zkl_waiter *w) {
  while (!w->done)
    pthread_cond_wait(&w->cond, &s->mu);
  return w->rc;
}

int zkl_lock_acquire(zkl_lock *l, int timeout_ms, int64_t *token) {
  zkl_session *s;
  zkl_waiter w = {0};
  zkl_target t = {0};
  int rc;
  if (!l || timeout_ms < -1)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  if (pthread_cond_init(&w.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  s = l->s;
  t.waiter = &w;
  pthread_mutex_lock(&s->mu);
  rc = zkl__acquire_locked(l, timeout_ms, &t);
  if (rc == ZKL_OK)
    rc = wait_for(s, &w);
  pthread_mutex_unlock(&s->mu);
  pthread_cond_destroy(&w.cond);
  if (rc == ZKL_OK && token)
    *token = w.token;
  return rc;
}

int zkl_lock_release(zkl_lock *l) {
  zkl_session *s;
  zkl_waiter w = {0};
  zkl_target t = {0};
  int rc;
  if (!l)
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  if (pthread_cond_init(&w.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  s = l->s;
  t.waiter = &w;
  pthread_mutex_lock(&s->mu);
  rc = zkl__release_locked(l, &t);
  if (rc == ZKL_OK)
    rc = wait_for(s, &w);
  pthread_mutex_unlock(&s->mu);
  pthread_cond_destroy(&w.cond);
  return rc;
}
