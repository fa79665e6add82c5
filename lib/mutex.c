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

int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name) {
  if (out && s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_new(out, s, ZKL_AGENT_MUTEX, &name, 1, 0, NULL);
  char queue[ZKL_PATH_MAX];
  if (!out || !s || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  zkl__name_path(queue, sizeof queue, name, NULL);
  return zkl__contender_new(out, s, name, queue, &zkl__recipe_mutex, NULL);
}
