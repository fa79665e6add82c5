/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutex.c - the mutex: Curator's InterProcessMutex layout,
 * _c_<id>-lock-<seq> under /locks/NAME, in one queue with every node of
 * the lock family there (kazoo's __lock__ nodes, a read/write lock's
 * readers and writers: a mutex is a writer that nobody reads; kinds.h).
 * The lowest node holds; every other contender waits for its immediate
 * predecessor, and is granted at once when that predecessor was the lowest
 * (no node can appear before ours while ours exists).
 */
#include "config.h"

#include <stdio.h>

#include "recipes.h"
#include "agent.h"

/* The first goes (the registry's first rule, kinds.h); everyone else waits
 * for its immediate predecessor, and is granted when that one goes if it
 * was the first (no node can come before ours while ours exists). Also the
 * rule of elections, of a read/write lock's writers and of a semaphore's
 * gate. */
void zkl__first_goes(const zkl_queue *q, const void *arg, zkl_verdict *out) {
  zkl_hold_ctx none = {0};
  (void)arg;
  out->kind = zkl__holds_first(q, q->own, NULL, &none) ? ZKL_GRANT
                                                      : ZKL_WAIT_NODE;
  out->node = q->own - 1;
  out->grant_on_delete = q->own == 1;
}

const zkl_recipe zkl__recipe_mutex = {
    .name = "mutex",
    .node = ZKL_NODE_MUTEX,
    .decide_locked = zkl__first_goes,
};

/* The same mutex in kazoo's layout (zkl_lock_set_layout): its node is
 * "_c_<id>-__lock__<seq>". Kazoo's Lock takes as a contender any child
 * that ends in "__lock__" and ten digits, and orders by those digits, so it
 * queues with ours; our id stays in front, where every reader of ours
 * (the lost reply's recovery by prefix, rider tags, break and revoke) finds
 * it as in Curator's layout. Only the marker differs, so the queue and its
 * rule are the mutex's. */
const zkl_recipe zkl__recipe_mutex_kazoo = {
    .name = "mutex",
    .node = ZKL_NODE_KAZOO_LOCK,
    .decide_locked = zkl__first_goes,
};

int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name) {
  if (out && s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_new(out, s, ZKL_AGENT_MUTEX, &name, 1, 0, NULL);
  char queue[ZKL_PATH_MAX];
  if (!out || !s || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  zkl__name_path(queue, sizeof queue, name, NULL);
  return zkl__contender_new(out, s, name, queue, &zkl__recipe_mutex, NULL);
}

int zkl_lock_set_layout(zkl_lock *l, zkl_layout layout) {
  int rc;
  if (!l || (layout != ZKL_LAYOUT_CURATOR && layout != ZKL_LAYOUT_KAZOO))
    return ZKL_EINVAL;
  if (ZKL_REMOTE_LOCK(l))
    return zkl__remote_set_layout(l, (int)layout);
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  /* A mutex of zkl_lock_new() only: a read/write lock's write side in
   * kazoo's names would be listed as a mutex (kinds.h knows "__lock__" as
   * one), and a multi-lock's or a semaphore's nodes have no kazoo form. */
  if (rc == ZKL_OK && l->recipe != &zkl__recipe_mutex &&
      l->recipe != &zkl__recipe_mutex_kazoo)
    rc = ZKL_EINVAL;
  /* Chosen once, before the first acquire: the layout is what this
   * contender is to the others (kazoo's Lock sees one, Curator's mutex the
   * other), which should not change under them from one hold to the
   * next. */
  else if (rc == ZKL_OK && (l->att || l->stats.acquires > 0))
    rc = ZKL_EBUSY;
  if (rc == ZKL_OK)
    l->recipe = layout == ZKL_LAYOUT_KAZOO ? &zkl__recipe_mutex_kazoo
                                           : &zkl__recipe_mutex;
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}
