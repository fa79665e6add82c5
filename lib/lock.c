/*
 * lock.c - the public face of the mutex, and the functions every kind of
 * zkl_lock shares: creating a mutex contender, freeing, the async acquire
 * and release, cancel, the token and the node path. (The blocking acquire
 * and release are in blocking.c, the settings in contender.c.)
 *
 * The mutex is the engine's first recipe: Curator's InterProcessMutex
 * layout, _c_<uuid>-lock-<seq>, ordered with kazoo's __lock__ nodes by
 * sequence number; the lowest node holds; every other contender waits for
 * its immediate predecessor, and is granted at once when that predecessor
 * was the lowest (no node can appear before ours while ours exists).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The first goes; everyone else waits for its immediate predecessor, and
 * is granted when that one goes if it was the first (no node can come
 * before ours while ours exists). Also the rule of elections and of a
 * read/write lock's writers. */
void zkl__first_goes(const zkl_queue *q, const void *arg, zkl_verdict *out) {
  (void)arg;
  out->kind = q->own == 0 ? ZKL_GRANT : ZKL_WAIT_NODE;
  out->node = q->own - 1;
  out->grant_on_delete = q->own == 1;
}

const zkl_recipe zkl__recipe_mutex = {
    .name = "mutex",
    .node = ZKL_NODE_MUTEX,
    .decide = zkl__first_goes,
};

int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name) {
  char queue[ZKL_PATH_MAX];
  if (!out || !s || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  snprintf(queue, sizeof queue, "%s/%s", ZKL_ROOT, name);
  return zkl__lock_create(out, s, name, queue, &zkl__recipe_mutex, NULL);
}

void zkl_lock_free(zkl_lock *l) {
  if (!l)
    return;
  if (zkl__lock_owned(l)) {
    /* a side of a read/write lock: zkl_rwlock_free() frees it */
    zkl__log("zkl_lock_free: %s belongs to a read/write lock; ignored",
             zkl_lock_name(l));
    return;
  }
  zkl__lock_destroy(l);
}

int zkl_lock_acquire_async(zkl_lock *l, int timeout_ms, zkl_acquire_cb cb,
                           void *arg) {
  zkl_target t = {0};
  zkl_session *s;
  int rc;
  if (!l || !cb || timeout_ms < -1)
    return ZKL_EINVAL;
  if (!(t.notice = zkl__notice_acquire(cb, arg)))
    return ZKL_ENOMEM;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  rc = zkl__acquire_locked(l, timeout_ms, &t);
  pthread_mutex_unlock(&s->mu);
  zkl__notice_free(t.notice); /* NULL unless refused */
  return rc;
}

int zkl_lock_release_async(zkl_lock *l, zkl_release_cb cb, void *arg) {
  zkl_target t = {0};
  zkl_session *s;
  int rc;
  if (!l)
    return ZKL_EINVAL;
  if (!(t.notice = zkl__notice_release(cb, arg)))
    return ZKL_ENOMEM;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  rc = zkl__release_locked(l, &t);
  pthread_mutex_unlock(&s->mu);
  zkl__notice_free(t.notice);
  return rc;
}

int zkl_lock_cancel(zkl_lock *l) {
  zkl_session *s;
  int rc;
  if (!l)
    return ZKL_EINVAL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  rc = zkl__cancel_locked(l);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int64_t zkl_lock_token(const zkl_lock *l) {
  zkl_session *s;
  int64_t t;
  if (!l)
    return 0;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  t = zkl__lock_token_locked((zkl_lock *)l);
  pthread_mutex_unlock(&s->mu);
  return t;
}

const char *zkl_lock_other_kind(const zkl_lock *l) {
  zkl_session *s;
  const char *kind;
  if (!l)
    return NULL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  kind = l->other_kind;
  pthread_mutex_unlock(&s->mu);
  return kind;
}

int zkl_lock_node_path(const zkl_lock *l, char *buf, size_t len) {
  zkl_session *s;
  int rc;
  if (!l || !buf)
    return ZKL_EINVAL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  rc = s->closing ? ZKL_ECLOSED : zkl__lock_node_path_locked(l, buf, len);
  pthread_mutex_unlock(&s->mu);
  return rc;
}
