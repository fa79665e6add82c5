/*
 * revoke.c - asking a holder to let go, as Curator's Revoker does: the
 * bytes __REVOKE__ written into the holder's node. The holder already keeps
 * a data watch on its own node (engine.c), so the request reaches it at no
 * cost of a new watch, and its revoke callback decides what to do.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define REVOKE_DATA "__REVOKE__"

/* The holder of NAME is the first node of the name itself (kinds.c). */
static const zkl_nodes name_nodes = {ZKL_PLACE_NAME, ZKL_FAMILIES_ALL};

typedef struct ask {
  pthread_cond_t cond;
  int pending;
  int rc;
  char node[ZKL_PATH_MAX / 2]; /* the listing's first node, if asked */
} ask;

static void ask_done_locked(zkl_session *s, ask *a, int rc) {
  (void)s;
  a->rc = rc;
  a->pending--;
  pthread_cond_signal(&a->cond);
}

static void set_done(int rc, const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  (void)stat;
  rc = zkl__enter_req_locked(r, rc);
  ask_done_locked(s, r->owner, rc);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void list_done(int rc, const struct String_vector *children,
                      const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  ask *a = r->owner;
  zkl_queue q;
  rc = zkl__enter_req_locked(r, rc);
  if (rc == ZOK) {
    rc = zkl__queue_build(children->data, children->count, &name_nodes, NULL,
                          NULL, &q);
    if (rc == ZKL_OK) {
      if (q.count > 0)
        snprintf(a->node, sizeof a->node, "%s", q.entries[0].name);
      else
        rc = ZKL_ENOTHELD;
      zkl__queue_free(&q);
    }
  } else if (rc == ZNONODE) {
    rc = ZKL_ENOTHELD;
  }
  ask_done_locked(s, a, rc);
  zkl__req_done_locked(r);
  zkl__leave(s);
}

/* Sends one request and waits for it; s->mu held. */
static int one_locked(zkl_session *s, ask *a, bool list, const char *path) {
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_QUERY);
  int rc;
  if (!r)
    return ZKL_ENOMEM;
  r->owner = a;
  rc = list ? zoo_aget_children(s->zh, path, 0, list_done, r)
            : zoo_aset(s->zh, path, REVOKE_DATA, (int)strlen(REVOKE_DATA), -1,
                       set_done, r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc;
  }
  a->pending = 1;
  while (a->pending > 0)
    pthread_cond_wait(&a->cond, &s->mu);
  return a->rc;
}

int zkl_revoke(zkl_session *s, const char *name, const char *node) {
  char parent[sizeof ZKL_ROOT + ZKL_NAME_MAX + 1], path[ZKL_PATH_MAX];
  ask a;
  int rc;
  if (!s || zkl__validate_name(name) != ZKL_OK ||
      (node && (!*node || strchr(node, '/') ||
                strlen(node) >= ZKL_PATH_MAX / 2)))
    return ZKL_EINVAL;
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  memset(&a, 0, sizeof a);
  if (pthread_cond_init(&a.cond, NULL) != 0)
    return ZKL_ESYSTEM;
  snprintf(parent, sizeof parent, "%s/%s", ZKL_ROOT, name);
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK && !node) {
    rc = one_locked(s, &a, true, parent);
    node = a.node;
  }
  if (rc == ZKL_OK) {
    if (snprintf(path, sizeof path, "%s/%s", parent, node) >=
        (int)sizeof path)
      rc = ZKL_EINVAL;
    else
      rc = one_locked(s, &a, false, path);
    if (rc == ZNONODE)
      rc = ZKL_ENOTHELD; /* gone meanwhile: nobody to ask */
  }
  zkl__unlock(s);
  pthread_cond_destroy(&a.cond);
  return rc;
}

void zkl_lock_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg) {
  zkl_session *s;
  if (!l)
    return;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  zkl__lock_set_revoke_locked(l, cb, arg);
  pthread_mutex_unlock(&s->mu);
}
