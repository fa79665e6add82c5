/*
 * multi.c - guarded writes: the caller's operations as one zoo_multi with a
 * check on the holder's own node in front, so that the whole transaction
 * commits only while that node exists, which, for a node that was granted
 * the lock, means while the lock is held. ZooKeeper does the fencing: a
 * holder that lost its lock (expired, its node deleted, paused past its
 * session) cannot commit, whatever it believes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* One transaction in flight. */
typedef struct multi {
  zkl_session *s;
  zkl_lock *l; /* reference */
  int count;
  zoo_op_t *ops;           /* count + 1: the check first */
  zoo_op_result_t *results; /* count + 1 */
  zoo_op_result_t *out;    /* the caller's, count */
  char path[ZKL_PATH_MAX]; /* the checked node */
  /* who hears: a waiter (blocking) or a callback */
  zkl_waiter *waiter;
  zkl_multi_cb cb;
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

/* The transaction's status: the guard's failure is the lock's loss. */
static int status_of(int rc, const zoo_op_result_t *results) {
  if (rc == ZOK)
    return ZKL_OK;
  if (results[0].err == ZNONODE)
    return ZKL_ELOST; /* the node is gone: nothing was written */
  if (rc == ZINVALIDSTATE || zkl__is_session_over(rc))
    return ZKL_EEXPIRED;
  return rc;
}

static void multi_done(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  multi *m = r->owner;
  int i;
  rc = zkl__enter_req_locked(r, rc);
  m->rc = status_of(rc, m->results);
  for (i = 0; i < m->count; i++)
    m->out[i] = m->results[i + 1];
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
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* Checks and sends; on ZKL_OK the completion owns m. */
static int send_locked(multi *m) {
  zkl_lock *l = m->l;
  zkl_session *s = m->s;
  zkl_req *r;
  int rc;
  rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK)
    return rc;
  zkl__lease_enforce_locked(s); /* a lapsed hold commits nothing */
  if (zkl__lock_node_path_locked(l, m->path, sizeof m->path) != ZKL_OK ||
      !zkl__lock_held_node_locked(l))
    return l->lost ? ZKL_ELOST : ZKL_ENOTHELD;
  zoo_check_op_init(&m->ops[0], m->path, -1);
  if (!(r = zkl__req_new_locked(s, ZKL_RQ_MULTI)))
    return ZKL_ENOMEM;
  r->owner = m;
  rc = zoo_amulti(s->zh, m->count + 1, m->ops, m->results, multi_done, r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
  }
  return ZKL_OK;
}

static int prepare(multi **out, zkl_lock *l, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results) {
  multi *m;
  if (!l || !ops || !results || count <= 0 || count > ZKL_MULTI_MAX)
    return ZKL_EINVAL;
  if (!(m = calloc(1, sizeof *m)))
    return ZKL_ENOMEM;
  m->ops = calloc((size_t)count + 1, sizeof *m->ops);
  m->results = calloc((size_t)count + 1, sizeof *m->results);
  if (!m->ops || !m->results) {
    free(m->ops);
    free(m->results);
    free(m);
    return ZKL_ENOMEM;
  }
  memcpy(m->ops + 1, ops, sizeof *ops * (size_t)count);
  m->count = count;
  m->out = results;
  m->l = l;
  m->s = zkl__lock_session(l);
  *out = m;
  return ZKL_OK;
}

int zkl_lock_multi_async(zkl_lock *l, int count, const zoo_op_t *ops,
                         zoo_op_result_t *results, zkl_multi_cb cb,
                         void *arg) {
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

int zkl_lock_multi(zkl_lock *l, int count, const zoo_op_t *ops,
                   zoo_op_result_t *results) {
  zkl_waiter w = {0};
  zkl_session *s;
  multi *m;
  int rc;
  if ((rc = prepare(&m, l, count, ops, results)) != ZKL_OK)
    return rc;
  if (zkl__on_zk_thread()) {
    free(m->ops);
    free(m->results);
    free(m);
    return ZKL_EDEADLK;
  }
  if (pthread_cond_init(&w.cond, NULL) != 0) {
    free(m->ops);
    free(m->results);
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
