/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lock.c - the public zkl_lock_* functions every kind of contender shares:
 * freeing, the async acquire and release, cancel, the token, the kind that
 * refused it and the node path. (The blocking acquire and release are in
 * blocking.c, the settings in lock_object.c, each recipe in its own file.)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "agent.h"

void zkl_lock_free(zkl_lock *l) {
  if (l && ZKL_REMOTE_LOCK(l)) {
    if (l->owned)
      zkl__log("zkl_lock_free: %s belongs to a read/write lock; ignored",
               l->name);
    else
      zkl__remote_free(l);
    return;
  }
  if (!l)
    return;
  if (zkl__lock_owned(l)) {
    /* a side of a read/write lock: zkl_rwlock_free() frees it */
    zkl__log("zkl_lock_free: %s belongs to a read/write lock; ignored",
             zkl_lock_name(l));
    return;
  }
  zkl__contender_free(l);
}

int zkl_lock_acquire_async(zkl_lock *l, int timeout_ms, zkl_acquire_cb cb,
                           void *arg) {
  if (l && cb && timeout_ms >= -1 && ZKL_REMOTE_LOCK(l))
    return zkl__remote_acquire_async(l, timeout_ms, cb, arg);
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
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_release_async(l, cb, arg);
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
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_cancel(l);
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
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_token(l);
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
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_other_kind(l);
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

int zkl_lock_get_node_path(const zkl_lock *l, char *buf, size_t len) {
  if (l && buf && ZKL_REMOTE_LOCK(l))
    return zkl__remote_node_paths(l, false, buf, len);
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

/* Appends " path" (no space before the first) of c's node to buf; false
 * when c has none. *rc says whether it fitted. */
static bool append_node_locked(const zkl_lock *c, char *buf, size_t len,
                               size_t *used, int *rc) {
  char path[ZKL_PATH_MAX];
  size_t n;
  if (zkl__lock_node_path_locked(c, path, sizeof path) != ZKL_OK)
    return false;
  n = strlen(path);
  if (*used + (*used ? 1 : 0) + n + 1 > len) {
    *rc = ZKL_EINVAL;
    return true;
  }
  if (*used)
    buf[(*used)++] = ' ';
  memcpy(buf + *used, path, n + 1);
  *used += n;
  return true;
}

/* Every node of the contender and of its parts that exists: a multi-lock's
 * all together (one transaction makes them, one per name, in the order of
 * the names), or a contender's own node and then its parts' (a semaphore's
 * lease node, then its gate node: each while it has it). */
int zkl_lock_get_node_paths(const zkl_lock *l, char *buf, size_t len) {
  if (l && buf && len > 0 && ZKL_REMOTE_LOCK(l))
    return zkl__remote_node_paths(l, true, buf, len);
  zkl_session *s;
  size_t used = 0;
  int rc = ZKL_OK, i;
  bool any = false;
  if (!l || !buf || len == 0)
    return ZKL_EINVAL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  buf[0] = '\0';
  if (s->closing) {
    rc = ZKL_ECLOSED;
  } else if (l->recipe->make == ZKL_MAKE_PARTS_TOGETHER) {
    /* all or none, so that the i-th path is the i-th name's */
    if (!zkl__lock_busy_locked(l))
      rc = ZKL_ENOTHELD;
    for (i = 0; i < l->n_parts && rc == ZKL_OK; i++)
      if (!append_node_locked(l->parts[i], buf, len, &used, &rc))
        rc = ZKL_ENOTHELD;
  } else {
    any = append_node_locked(l, buf, len, &used, &rc);
    for (i = 0; i < l->n_parts && rc == ZKL_OK; i++)
      any = append_node_locked(l->parts[i], buf, len, &used, &rc) || any;
    if (rc == ZKL_OK && !any)
      rc = ZKL_ENOTHELD;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

bool zkl_lock_break_mark(const zkl_lock *l) {
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_break_mark(l);
  zkl_session *s;
  bool marked;
  if (!l)
    return false;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  marked = zkl__lock_break_mark_locked(l);
  pthread_mutex_unlock(&s->mu);
  return marked;
}

const char *zkl_lock_refused_name(const zkl_lock *l) {
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_refused_name(l);
  zkl_session *s;
  const char *name;
  if (!l)
    return NULL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  name = l->refused; /* set by a transaction of parts only (together.c) */
  pthread_mutex_unlock(&s->mu);
  return name;
}
