/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lock_object.c - the zkl_lock object: its life (references), its settings,
 * and how its results reach the user: blocking waiters, callbacks queued
 * for the completion thread, and the engine's own hooks.
 *
 * A lock is referenced by the user (until zkl_lock_free), by each of its
 * attempts, and by each queued notice, so the pointer a callback receives
 * is valid memory until the callback returns.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "agent.h"

/* A user callback for one lock. */
struct zkl_notice {
  zkl_call base;
  enum { N_ACQUIRE, N_RELEASE, N_LOST, N_REVOKE } kind;
  zkl_lock *l; /* reference, taken when queued */
  int rc;      /* status, or the lost reason */
  int64_t token;
  zkl_acquire_cb acquire_cb;
  zkl_release_cb release_cb;
  zkl_lost_cb lost_cb;
  zkl_revoke_cb revoke_cb;
  void *arg;
};

/* ------------------------------------------------------------ the object */

int zkl__lock_object_new(zkl_lock **out, zkl_session *s, const char *name,
                  const char *queue, const zkl_recipe *r, const void *arg) {
  zkl_engine *e;
  zkl_lock *l = calloc(1, sizeof *l);
  int rc;
  if (!l)
    return ZKL_ENOMEM;
  l->name = strdup(name);
  l->queue = strdup(queue);
  if (!l->name || !l->queue) {
    free(l->name);
    free(l->queue);
    free(l);
    return ZKL_ENOMEM;
  }
  l->recipe = r;
  l->arg = arg;
  l->watch_after_ms = ZKL_WATCH_AFTER_DEFAULT_MS;
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  /* the caller attached the engine (zkl__engine_of_locked) */
  if (rc == ZKL_OK && !(e = zkl__session_hooks_ctx_locked(s)))
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    free(l->name);
    free(l->queue);
    free(l);
    return rc;
  }
  l->s = s;
  l->refs = 1;
  zkl__session_ref_locked(s);
  zkl__list_push(&e->locks, &l->link);
  pthread_mutex_unlock(&s->mu);
  *out = l;
  return ZKL_OK;
}

void zkl__lock_own(zkl_lock *l, void (*free_arg)(void *arg)) {
  l->owned = true;
  l->free_arg = free_arg;
}

void zkl__lock_set_free_arg(zkl_lock *l, void (*free_arg)(void *arg)) {
  l->free_arg = free_arg;
}

bool zkl__lock_owned(const zkl_lock *l) { return l->owned; }

int zkl__lock_add_part(zkl_lock *whole, zkl_lock *part) {
  zkl_lock **parts;
  pthread_mutex_lock(&whole->s->mu);
  parts = realloc(whole->parts, (size_t)(whole->n_parts + 1) * sizeof *parts);
  if (!parts) {
    pthread_mutex_unlock(&whole->s->mu);
    return ZKL_ENOMEM;
  }
  whole->parts = parts;
  part->owned = true;
  part->whole = whole; /* borrowed: whole outlives its part's use of it */
  whole->parts[whole->n_parts++] = part;
  part->refs++; /* whole's, until whole is freed */
  pthread_mutex_unlock(&whole->s->mu);
  return ZKL_OK;
}

zkl_session *zkl__lock_session(const zkl_lock *l) { return l->s; }

void zkl__lock_ref_locked(zkl_lock *l) { l->refs++; }

void zkl__lock_unref_locked(zkl_lock *l) {
  zkl_session *s = l->s;
  int i;
  if (--l->refs > 0)
    return;
  zkl__list_remove(&l->link);
  for (i = 0; i < l->n_parts; i++)
    zkl__lock_unref_locked(l->parts[i]);
  free(l->parts);
  if (l->free_arg)
    l->free_arg((void *)l->arg);
  free(l->name);
  free(l->queue);
  free(l->info);
  free(l);
  zkl__session_unref_locked(s);
}

void zkl__each_lock_locked(zkl_engine *e, void (*fn)(zkl_lock *l, void *ctx),
                           void *ctx) {
  zkl_link *n, *next;
  for (n = e->locks.next; n != &e->locks; n = next) {
    zkl_lock *l = zkl__container_of(n, zkl_lock, link);
    l->refs++; /* keeps n valid until next is read */
    fn(l, ctx);
    next = n->next;
    zkl__lock_unref_locked(l);
  }
}

/* --------------------------------------------------------------- notices */

/* A grant waits in the queue of callbacks for the ones before it; the
 * lease can run out meanwhile, and its lost callback runs on the timer
 * thread. The caller must not take the lock as held then: it hears
 * ZKL_ELOST, as a blocking acquire would. */
static void acquire_run(zkl_notice *n) {
  zkl_session *s = n->l->s;
  int rc = n->rc;
  int64_t token = n->token;
  if (rc == ZKL_OK) {
    pthread_mutex_lock(&s->mu);
    if (n->l->lost && n->l->lost_token == token) {
      rc = ZKL_ELOST;
      token = 0;
    }
    pthread_mutex_unlock(&s->mu);
  }
  n->acquire_cb(n->l, rc, token, n->arg);
}

static void notice_run(zkl_call *c) {
  zkl_notice *n = (zkl_notice *)c;
  switch (n->kind) {
  case N_ACQUIRE:
    acquire_run(n);
    break;
  case N_RELEASE:
    if (n->release_cb)
      n->release_cb(n->l, n->rc, n->arg);
    break;
  case N_LOST:
    n->lost_cb(n->l, n->rc, n->arg);
    break;
  case N_REVOKE:
    n->revoke_cb(n->l, n->arg);
    break;
  }
}

static void notice_release_locked(zkl_call *c) {
  zkl_notice *n = (zkl_notice *)c;
  zkl__lock_unref_locked(n->l);
  free(n);
}

static zkl_notice *notice_new(int kind) {
  zkl_notice *n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  n->base.run = notice_run;
  n->base.release_locked = notice_release_locked;
  n->kind = kind;
  return n;
}

zkl_notice *zkl__notice_acquire(zkl_acquire_cb cb, void *arg) {
  zkl_notice *n = notice_new(N_ACQUIRE);
  if (n) {
    n->acquire_cb = cb;
    n->arg = arg;
  }
  return n;
}

zkl_notice *zkl__notice_release(zkl_release_cb cb, void *arg) {
  zkl_notice *n = notice_new(N_RELEASE);
  if (n) {
    n->release_cb = cb;
    n->arg = arg;
  }
  return n;
}

void zkl__notice_free(zkl_notice *n) { free(n); }

void zkl__notify_locked(zkl_lock *l, zkl_target *t, int rc, int64_t token) {
  if (t->waiter) {
    t->waiter->rc = rc;
    t->waiter->token = token;
    t->waiter->done = true;
    pthread_cond_signal(&t->waiter->cond);
    t->waiter = NULL;
  } else if (t->notice) {
    zkl_notice *n = t->notice;
    t->notice = NULL;
    n->l = l;
    l->refs++;
    n->rc = rc;
    n->token = token;
    zkl__queue_call_locked(l->s, &n->base);
  } else if (t->hook_locked) {
    void (*hook)(void *, int, int64_t) = t->hook_locked;
    t->hook_locked = NULL;
    hook(t->hook_ctx, rc, token);
  }
}

void zkl__notify_lost_locked(zkl_lock *l, int reason, zkl_call **direct) {
  zkl_notice *n;
  if (l->whole) /* a part's loss is its whole's recipe's business */
    return;
  if (!l->lost_cb)
    return;
  if (!(n = notice_new(N_LOST))) {
    zkl__log("out of memory: lost notice for lock %s dropped", l->name);
    return;
  }
  n->l = l;
  l->refs++;
  n->rc = reason;
  n->lost_cb = l->lost_cb;
  n->arg = l->lost_arg;
  if (direct) {
    n->base.next = *direct;
    *direct = &n->base;
  } else {
    zkl__queue_call_locked(l->s, &n->base);
  }
}

void zkl__notify_part_ended_locked(zkl_lock *part, int reason) {
  zkl_lock *whole = part->whole;
  if (!whole || part->freed)
    return;
  if (whole->recipe->part_ended_locked)
    whole->recipe->part_ended_locked(whole, part, reason);
}

/* -------------------------------------------------------------- settings */

int zkl_lock_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg) {
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_on_lost(l, cb, arg);
  int rc = ZKL_OK;
  if (!l)
    return ZKL_EINVAL;
  pthread_mutex_lock(&l->s->mu);
  if (l->s->closing) {
    rc = ZKL_ECLOSED;
  } else {
    l->lost_cb = cb;
    l->lost_arg = arg;
  }
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

const char *zkl_lock_name(const zkl_lock *l) { return l ? l->name : NULL; }

int zkl_lock_set_acl(zkl_lock *l, zkl_acl mode) {
  int rc;
  if (!l || (mode != ZKL_ACL_OPEN && mode != ZKL_ACL_CREATOR &&
             mode != ZKL_ACL_PRIVATE))
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set(l, ZKL_AGENT_SET_ACL, mode, NULL);
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK) {
    int i;
    l->acl = mode;
    for (i = 0; i < l->n_parts; i++) /* a part's nodes are l's too */
      l->parts[i]->acl = mode;
  }
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

int zkl_lock_set_owner_info(zkl_lock *l, const char *info) {
  char *copy = NULL, **part_copies = NULL;
  int rc, i, n;
  if (!l || zkl__validate_info(info) != ZKL_OK)
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set(l, ZKL_AGENT_SET_INFO, 0, info);
  pthread_mutex_lock(&l->s->mu);
  n = l->n_parts; /* fixed once the contender is made */
  pthread_mutex_unlock(&l->s->mu);
  if (info && *info) {
    bool ok = (copy = strdup(info)) != NULL &&
              (n == 0 || (part_copies = calloc((size_t)n, sizeof *part_copies)));
    for (i = 0; ok && i < n; i++)
      ok = (part_copies[i] = strdup(info)) != NULL;
    if (!ok) {
      for (i = 0; part_copies && i < n; i++)
        free(part_copies[i]);
      free(part_copies);
      free(copy);
      return ZKL_ENOMEM;
    }
  }
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK) {
    free(l->info);
    l->info = copy;
    copy = NULL;
    for (i = 0; i < n; i++) { /* a part's nodes describe their owner too */
      free(l->parts[i]->info);
      l->parts[i]->info = part_copies ? part_copies[i] : NULL;
      if (part_copies)
        part_copies[i] = NULL;
    }
  }
  pthread_mutex_unlock(&l->s->mu);
  for (i = 0; part_copies && i < n; i++)
    free(part_copies[i]);
  free(part_copies);
  free(copy);
  return rc;
}

int zkl_lock_set_max_hold(zkl_lock *l, int max_hold_ms) {
  int rc;
  if (!l || max_hold_ms < 0)
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set(l, ZKL_AGENT_SET_MAX_HOLD, max_hold_ms, NULL);
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK)
    l->max_hold_ms = max_hold_ms; /* read at the next grant (engine.c) */
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

int zkl_lock_set_max_hold_grace(zkl_lock *l, int grace_ms) {
  int rc;
  if (!l || grace_ms < 0)
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set(l, ZKL_AGENT_SET_GRACE, grace_ms, NULL);
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK)
    l->max_hold_grace_ms = grace_ms; /* read at the next grant (engine.c) */
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

int zkl_lock_set_watch_after(zkl_lock *l, int watch_after_ms) {
  int rc, i;
  if (!l || watch_after_ms < 0)
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set(l, ZKL_AGENT_SET_WATCH_AFTER, watch_after_ms, NULL);
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK) {
    /* read at the next grant (engine.c); a multi-lock's holds are its
     * parts', a semaphore's gate never holds */
    l->watch_after_ms = watch_after_ms;
    for (i = 0; i < l->n_parts; i++)
      l->parts[i]->watch_after_ms = watch_after_ms;
  }
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

void zkl__lock_set_revoke_locked(zkl_lock *l, zkl_revoke_cb cb, void *arg) {
  l->revoke_cb = cb;
  l->revoke_arg = arg;
}

void zkl__notify_revoke_locked(zkl_lock *l) {
  zkl_notice *n;
  /* A part (a multi-lock's node in one name, a semaphore's place at its
   * gate) is asked as its whole: the callback is the application's, set on
   * the whole. */
  while (l->whole)
    l = l->whole;
  if (!l->revoke_cb || l->freed)
    return;
  if (!(n = notice_new(N_REVOKE))) {
    zkl__log("out of memory: revoke request for lock %s dropped", l->name);
    return;
  }
  n->l = l;
  l->refs++;
  n->revoke_cb = l->revoke_cb;
  n->arg = l->revoke_arg;
  zkl__queue_call_locked(l->s, &n->base);
}

int zkl_lock_get_stats(const zkl_lock *l, zkl_lock_stats *out) {
  int rc;
  if (!l || !out)
    return ZKL_EINVAL;
  pthread_mutex_lock(&l->s->mu);
  *out = l->stats;
  /* Copied all the same: the counters as the close or the session's end
   * left them; the code says which, as every call on its locks does. */
  rc = zkl__session_usable_locked(l->s);
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}
