/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guarded.c - guarded writes: the caller's operations as one zoo_multi with a
 * check on the holder's own node in front (on each of its nodes, for a
 * contender with no node of its own whose parts hold: a multi-lock), so
 * that the whole transaction commits only while those nodes exist, which,
 * for nodes that were granted the lock, means while the lock is held.
 * ZooKeeper does the fencing: a holder that lost its lock (expired, a node
 * deleted, paused past its session) cannot commit, whatever it believes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "io.h"
#include "agent.h"

/* One transaction in flight. */
typedef struct multi {
  zkl_session *s;
  zkl_lock *l; /* reference */
  int count;
  int guards;               /* the checks in front: the nodes that hold */
  zoo_op_t *ops;            /* guards + count: the checks first */
  zoo_op_result_t *results; /* guards + count */
  zoo_op_result_t *out;     /* the caller's, count */
  char (*paths)[ZKL_PATH_MAX]; /* the checked nodes, guards of them */
  /* who hears: a waiter (blocking) or a callback */
  zkl_waiter *waiter;
  zkl_commit_cb cb;
  void *arg;
  int rc;
} multi;

typedef struct multi_call {
  zkl_call base;
  multi *m;
} multi_call;

static void multi_free_locked(multi *m) {
  zkl__lock_unref_locked(m->l);
  free(m->ops);
  free(m->results);
  free(m->paths);
  free(m);
}

static void call_run(zkl_call *c) {
  multi *m = ((multi_call *)c)->m;
  m->cb(m->l, m->rc, m->arg);
}

static void call_release_locked(zkl_call *c) {
  multi_free_locked(((multi_call *)c)->m);
  free(c);
}

/* The transaction's status: a guard's failure is the lock's loss. */
static int status_of(int rc, const zoo_op_result_t *results, int guards) {
  int i;
  if (rc == ZOK)
    return ZKL_OK;
  for (i = 0; i < guards; i++)
    if (results[i].err == ZNONODE)
      return ZKL_ELOST; /* a node is gone: nothing was written */
  if (rc == ZINVALIDSTATE || zkl__is_session_over(rc))
    return ZKL_EEXPIRED;
  /* The client says ZOPERATIONTIMEOUT when it timed the connection out:
   * the same unknown outcome as any answer lost with its connection. */
  if (zkl__is_connection_loss(rc))
    return ZCONNECTIONLOSS;
  return rc;
}

static void multi_done_locked(zkl_req *r, const zkl_answer *a) {
  zkl_session *s = r->s;
  multi *m = r->owner;
  int i;
  m->rc = status_of(a->rc, m->results, m->guards);
  for (i = 0; i < m->count; i++)
    m->out[i] = m->results[m->guards + i];
  if (m->waiter) {
    m->waiter->rc = m->rc;
    m->waiter->done = true;
    pthread_cond_signal(&m->waiter->cond);
  } else {
    multi_call *c = calloc(1, sizeof *c);
    if (c) {
      c->base.run = call_run;
      c->base.release_locked = call_release_locked;
      c->m = m;
      zkl__queue_call_locked(s, &c->base);
    } else {
      zkl__log("out of memory: guarded write callback dropped");
      multi_free_locked(m);
    }
  }
}

/* Checks and sends; on ZKL_OK the completion owns m. */
static int send_locked(multi *m) {
  zkl_lock *l = m->l;
  zkl_session *s = m->s;
  zkl_req *r;
  int rc, i;
  rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK)
    return rc;
  zkl__lease_enforce_locked(s); /* a lapsed hold commits nothing */
  if (l->recipe->make == ZKL_MAKE_PARTS_TOGETHER) {
    /* held when the whole is: its parts hold their nodes */
    if (!zkl__lock_token_locked(l))
      return l->lost ? ZKL_ELOST : ZKL_ENOTHELD;
    for (i = 0; i < m->guards; i++)
      if (zkl__lock_node_path_locked(l->parts[i], m->paths[i],
                                     sizeof m->paths[i]) != ZKL_OK ||
          !zkl__lock_held_node_locked(l->parts[i]))
        return ZKL_ELOST;
  } else if (zkl__lock_node_path_locked(l, m->paths[0], sizeof m->paths[0]) !=
                 ZKL_OK ||
             !zkl__lock_held_node_locked(l)) {
    return l->lost ? ZKL_ELOST : ZKL_ENOTHELD;
  }
  for (i = 0; i < m->guards; i++)
    zoo_check_op_init(&m->ops[i], m->paths[i], -1);
  if (!(r = zkl__req_new_locked(s, ZKL_RQ_MULTI)))
    return ZKL_ENOMEM;
  r->owner = m;
  r->answered_locked = multi_done_locked;
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  rc = zkl__safe_amulti(s->zh, m->guards + m->count, m->ops, m->results,
                        zkl__on_void, r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
  }
  return ZKL_OK;
}

static int prepare(multi **out, zkl_lock *l, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results) {
  multi *m;
  if (!l || !ops || !results || count <= 0 || count > ZKL_COMMIT_OPS_MAX)
    return ZKL_EINVAL;
  if (!(m = calloc(1, sizeof *m)))
    return ZKL_ENOMEM;
  /* the parts of a whole made together are fixed at its creation */
  m->guards = l->recipe->make == ZKL_MAKE_PARTS_TOGETHER ? l->n_parts : 1;
  m->ops = calloc((size_t)(m->guards + count), sizeof *m->ops);
  m->results = calloc((size_t)(m->guards + count), sizeof *m->results);
  m->paths = calloc((size_t)m->guards, sizeof *m->paths);
  if (!m->ops || !m->results || !m->paths) {
    free(m->ops);
    free(m->results);
    free(m->paths);
    free(m);
    return ZKL_ENOMEM;
  }
  memcpy(m->ops + m->guards, ops, sizeof *ops * (size_t)count);
  m->count = count;
  m->out = results;
  m->l = l;
  m->s = zkl__lock_session(l);
  *out = m;
  return ZKL_OK;
}

int zkl_lock_commit_async(zkl_lock *l, int count, const zoo_op_t *ops,
                          zoo_op_result_t *results, zkl_commit_cb cb,
                          void *arg) {
  if (l && ZKL_REMOTE_LOCK(l))
    return cb ? zkl__remote_commit(l, count, ops, results, cb, arg)
              : ZKL_EINVAL;
  multi *m;
  int rc;
  zkl_session *s;
  if (!cb)
    return ZKL_EINVAL;
  if ((rc = prepare(&m, l, count, ops, results)) != ZKL_OK)
    return rc;
  m->cb = cb;
  m->arg = arg;
  s = m->s; /* m may be gone once the lock is dropped, or freed below */
  pthread_mutex_lock(&s->mu);
  zkl__lock_ref_locked(l);
  rc = send_locked(m);
  if (rc != ZKL_OK)
    multi_free_locked(m);
  zkl__unlock(s);
  return rc;
}

int zkl_lock_commit(zkl_lock *l, int count, const zoo_op_t *ops,
                    zoo_op_result_t *results) {
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_commit(l, count, ops, results, NULL, NULL);
  zkl_waiter w = {0};
  zkl_session *s;
  multi *m;
  int rc;
  if ((rc = prepare(&m, l, count, ops, results)) != ZKL_OK)
    return rc;
  if (zkl__on_zk_thread()) {
    free(m->ops);
    free(m->results);
    free(m->paths);
    free(m);
    return ZKL_EDEADLK;
  }
  if (pthread_cond_init(&w.cond, NULL) != 0) {
    free(m->ops);
    free(m->results);
    free(m->paths);
    free(m);
    return ZKL_ESYSTEM;
  }
  m->waiter = &w;
  s = m->s;
  pthread_mutex_lock(&s->mu);
  zkl__lock_ref_locked(l);
  rc = send_locked(m);
  if (rc == ZKL_OK) {
    while (!w.done)
      pthread_cond_wait(&w.cond, &s->mu);
    rc = w.rc;
  }
  multi_free_locked(m);
  zkl__unlock(s);
  pthread_cond_destroy(&w.cond);
  return rc;
}
