/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rwlock.c - read/write locks: two recipes on one queue.
 *
 * The layout is Curator's InterProcessReadWriteLock: under /locks/NAME,
 * readers write _c_<id>-__READ__<seq> and writers _c_<id>-__WRIT__<seq>,
 * and one sequence (the parent's) orders both kinds. kazoo's ReadLock and
 * WriteLock nodes (__rlock__, __lock__) count as readers and writers too,
 * and so do mutex nodes (lock-): a mutex is a writer that nobody reads, so
 * a mutex and a writer on one name exclude each other (kinds.h).
 *
 *   reader  granted when no writer is ahead of it; otherwise it watches the
 *           nearest writer ahead (readers queued behind one writer are all
 *           granted, each by its own watch, when it leaves: no herd on one
 *           node). Only contenders ahead count (kazoo #649 deadlocked by
 *           looking behind).
 *   writer  granted when first; otherwise it watches its immediate
 *           predecessor, of either kind.
 *
 * Each side is a zkl_lock with everything a mutex has. A holder of the
 * write side may take the read side (downgrade): the read rule grants it
 * while that side holds, and a write release while the read side holds
 * keeps the write node until the read side lets go, since writers queued
 * behind it must keep waiting (Curator deletes it, and a writer queued
 * behind is then granted beside the downgraded reader). The read node of a
 * downgrade names the write node in its own name (ZKL_RIDER_TAG, kinds.h):
 * it may stand behind writers that queued while the write side held, so
 * that anyone who reads the queue (zkl_name_list(), zkl_name_break(),
 * zkl_name_revoke()) can tell it holds, and must go with the write node. Taking the
 * write side while holding (or waiting for) only the read side would wait for
 * itself: refused with ZKL_EUPGRADE. (Curator's ReadLock grants a thread
 * that holds the write lock the same way.)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes.h"
#include "agent.h"

struct zkl_rwlock {
  zkl_lock *read;
  zkl_lock *write;
  int sides;    /* sides still allocated: the last one frees this */
  char *anchor; /* a downgrade's write node, kept while the read side holds */
};

/* Every node that is no reader excludes readers: writers, mutexes (a
 * mutex is a writer nobody reads), and a node of another family that is
 * on its way out (kinds.h). */
static bool is_writer(const zkl_queue_entry *e) {
  return !zkl__node_kinds[e->kind].reader;
}

/* Whether it holds is the registry's reader rule (kinds.h): no writer
 * ahead, or a downgrade: our node names our own write node, which holds,
 * and writers queued behind that one wait for it anyway (its name says so
 * since the node is made while the write side holds: read_tag_locked).
 * What is left here is whom to wait for. */
static void read_decide_locked(const zkl_queue *q, const void *arg,
                        zkl_verdict *out) {
  zkl_hold_ctx none = {0};
  int i, writers = 0, nearest = -1;
  (void)arg;
  for (i = 0; i < q->own; i++) {
    if (!is_writer(&q->entries[i]))
      continue;
    writers++;
    nearest = i;
  }
  out->kind = zkl__holds_reader(q, q->own, NULL, &none) ? ZKL_GRANT
                                                        : ZKL_WAIT_NODE;
  out->node = nearest;
  /* With one writer ahead, its leaving grants us: a writer that comes
   * later queues behind us. */
  out->grant_on_delete = writers == 1;
}

/* A read node made while the write side holds says so in its name (see
 * the top of this file). */
static int read_tag_locked(const void *arg, bool skips_prepare, char *buf,
                           size_t len) {
  const zkl_rwlock *rw = arg;
  const char *write = zkl__lock_held_node_locked(rw->write);
  (void)skips_prepare; /* it has nothing to prepare */
  return write ? zkl__rider_tag(write, buf, len) : 0;
}

/* Downgrade: the write side releases while its read side holds. Its node
 * stays in the queue until the read side lets go, so that the writers that
 * queued behind it keep waiting (the read node came after them). */
static bool write_keep_locked(const void *arg, const zkl_lock *l,
                              const char *path) {
  zkl_rwlock *rw = (zkl_rwlock *)arg;
  (void)l;
  if (!zkl__lock_held_node_locked(rw->read) || rw->anchor)
    return false;
  return (rw->anchor = strdup(path)) != NULL;
}

/* The read side's attempt ended: the downgrade's write node goes now. */
static void read_ended_locked(const void *arg, const zkl_lock *l) {
  zkl_rwlock *rw = (zkl_rwlock *)arg;
  if (!rw->anchor)
    return;
  zkl__cleanup_delete_locked(zkl__lock_session(l), rw->anchor);
  free(rw->anchor);
  rw->anchor = NULL;
}

static int write_admit_locked(const void *arg) {
  const zkl_rwlock *rw = arg;
  return zkl__lock_busy_locked(rw->read) ? ZKL_EUPGRADE : ZKL_OK;
}

static void side_freed(void *arg) {
  zkl_rwlock *rw = arg;
  if (--rw->sides == 0) {
    free(rw->anchor);
    free(rw);
  }
}

const zkl_recipe zkl__recipe_read = {
    .name = "read",
    .node = ZKL_NODE_READ,
    .decide_locked = read_decide_locked,
    .node_tag_locked = read_tag_locked,
    .ended_locked = read_ended_locked,
};
const zkl_recipe zkl__recipe_write = {
    .name = "write",
    .node = ZKL_NODE_WRITE,
    .decide_locked = zkl__first_goes,
    .admit_locked = write_admit_locked,
    .keep_on_release_locked = write_keep_locked,
};

int zkl_rwlock_new(zkl_rwlock **out, zkl_session *s, const char *name) {
  if (out && s && name && ZKL_REMOTE_SESSION(s)) {
    zkl_rwlock *arw = calloc(1, sizeof *arw);
    int rrc;
    if (!arw)
      return ZKL_ENOMEM;
    if ((rrc = zkl__remote_new_rwlock(&arw->read, &arw->write, s, name)) !=
        ZKL_OK) {
      free(arw);
      return rrc;
    }
    arw->sides = -1; /* the agent's: freed together, at once */
    *out = arw;
    return ZKL_OK;
  }
  char queue[ZKL_PATH_MAX];
  zkl_rwlock *rw;
  int rc;
  if (!out || !s || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if (!(rw = calloc(1, sizeof *rw)))
    return ZKL_ENOMEM;
  zkl__name_path(queue, sizeof queue, name, NULL);
  rc = zkl__contender_new(&rw->read, s, name, queue, &zkl__recipe_read, rw);
  if (rc == ZKL_OK) {
    rc = zkl__contender_new(&rw->write, s, name, queue, &zkl__recipe_write, rw);
    if (rc != ZKL_OK)
      zkl__contender_free(rw->read);
  }
  if (rc != ZKL_OK) {
    free(rw);
    return rc;
  }
  rw->sides = 2;
  zkl__lock_own(rw->read, side_freed);
  zkl__lock_own(rw->write, side_freed);
  *out = rw;
  return ZKL_OK;
}

zkl_lock *zkl_rwlock_read(zkl_rwlock *rw) { return rw ? rw->read : NULL; }
zkl_lock *zkl_rwlock_write(zkl_rwlock *rw) { return rw ? rw->write : NULL; }

void zkl_rwlock_free(zkl_rwlock *rw) {
  if (rw && rw->sides == -1) {
    zkl__remote_free_rwlock(rw->read, rw->write);
    free(rw);
    return;
  }
  if (!rw)
    return;
  /* Together: the write side's release asks whether the read side holds
   * (a downgrade keeps its node), so neither may be gone before both have
   * ended; the last reference frees rw. */
  zkl_lock *sides[2] = {rw->read, rw->write};
  zkl__contenders_free(sides, 2);
}
