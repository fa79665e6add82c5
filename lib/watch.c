/* SPDX-License-Identifier: Apache-2.0 */
/*
 * watch.c - watch records: the context pointer the ZooKeeper client holds
 * for each watch the engine sets.
 *
 * The client keeps that pointer from the moment the get that sets the watch
 * succeeds until the watch fires, is removed, or the handle is closed; and
 * an event already queued reaches the watcher even after a removal was
 * refused (ZNOWATCHER) because of it. A session event queued before a
 * removal that worked reaches it too: watcher() reads nothing of the record
 * for those. So a record lives on its own terms,
 * not its owner's: it is freed only when its owner no longer wants it AND
 * the client can no longer call it, and it holds a reference on its owner
 * until then.
 *
 * The client's side of a record:
 *   ARMING  the get that sets it is in flight: it may yet be registered
 *   ARMED   registered: the client may call it
 *   GONE    the client no longer holds it
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

struct zkl_watch {
  zkl_session *s; /* reference */
  zkl_link link;  /* in the engine's watches */
  int type;       /* ZKL_WATCH_* */
  char *path;
  const zkl_watch_ops *ops;
  void *owner;
  enum { W_ARMING, W_ARMED, W_GONE } client;
  bool wanted;      /* the owner still wants its events */
  bool in_callback; /* one of our callbacks is using it: not freed yet */
};

void *zkl__watch_owner(const zkl_watch *w) { return w->owner; }
const char *zkl__watch_path(const zkl_watch *w) { return w->path; }

static zkl_engine *engine_of(zkl_session *s) {
  return zkl__session_hooks_ctx_locked(s);
}

static void maybe_free_locked(zkl_watch *w) {
  zkl_session *s = w->s;
  if (w->wanted || w->client != W_GONE || w->in_callback)
    return;
  zkl__list_remove(&w->link);
  w->ops->release_locked(w);
  free(w->path);
  free(w);
  zkl__session_unref_locked(s);
}

/* A session event must not touch ctx: the client delivers one to a copy
 * of its list of every watcher, made when the event came in (the IO
 * thread), so a record taken out of the client and freed meanwhile (its
 * owner dropped it as its get was answered, zkl__watch_leave_client()
 * said ZOK) is still called with it. Events of a node take the watcher
 * out of the client's maps as they are copied, so one of those is never
 * delivered after a removal that said ZOK. (Found by ASan in the agent
 * under the fault suite: a heap-use-after-free here.) */
static void watcher(zhandle_t *zh, int type, int state, const char *path,
                    void *ctx) {
  zkl_watch *w;
  zkl_session *s;
  (void)zh;
  (void)state;
  (void)path;
  zkl__mark_zk_thread();
  if (type == ZOO_SESSION_EVENT)
    return; /* the session hears those; the watch stays armed */
  w = ctx;
  s = w->s;
  zkl__enter_locked(s);
  s->watch_events++;
  w->client = W_GONE; /* watches fire once */
  w->in_callback = true;
  if (w->wanted)
    w->ops->fired_locked(w, type);
  w->in_callback = false;
  maybe_free_locked(w);
  zkl__leave(s);
}

static void remove_locked(zkl_watch *w);

/* After the get that arms it: the client holds it now (ZOK), or not. */
static void armed_locked(zkl_watch *w, int rc, const char *data, int len,
                         const struct Stat *stat, const void *children) {
  w->client = rc == ZOK ? W_ARMED : W_GONE;
  w->in_callback = true;
  /* The owner hears it even when it dropped the watch meanwhile: it
   * counted the get as pending. */
  w->ops->armed_locked(w, rc, data, len, stat, children);
  if (!w->wanted && w->client == W_ARMED)
    remove_locked(w); /* dropped while it was being set */
  w->in_callback = false;
  maybe_free_locked(w);
}

static void data_armed_locked(zkl_req *r, const zkl_answer *a) {
  armed_locked(r->owner, a->rc, a->value, a->len, a->stat, NULL);
}

static void exists_armed_locked(zkl_req *r, const zkl_answer *a) {
  /* exists sets its watch on a missing node too: that is what it is for */
  armed_locked(r->owner, a->rc == ZNONODE ? ZOK : a->rc, NULL, 0,
               a->rc == ZOK ? a->stat : NULL, NULL);
}

static void children_armed_locked(zkl_req *r, const zkl_answer *a) {
  armed_locked(r->owner, a->rc, NULL, 0, NULL, a->children);
}

zkl_watch *zkl__watch_arm_locked(zkl_session *s, int type, int rq,
                                 const char *path, const zkl_watch_ops *ops,
                                 void *owner, int *rc) {
  zkl_engine *e = engine_of(s);
  zkl_watch *w = calloc(1, sizeof *w);
  zkl_req *r;
  *rc = ZKL_ENOMEM;
  if (!w)
    return NULL;
  if (!(w->path = strdup(path)) || !(r = zkl__req_new_locked(s, rq))) {
    free(w->path);
    free(w);
    return NULL;
  }
  r->owner = w;
  switch (type) {
  case ZKL_WATCH_DATA:
    r->answered_locked = data_armed_locked;
    *rc = zoo_awget(s->zh, path, watcher, w, zkl__on_data, r);
    break;
  case ZKL_WATCH_CHILDREN:
    r->answered_locked = children_armed_locked;
    *rc = zoo_awget_children(s->zh, path, watcher, w, zkl__on_strings, r);
    break;
  default:
    r->answered_locked = exists_armed_locked;
    *rc = zoo_awexists(s->zh, path, watcher, w, zkl__on_stat, r);
    break;
  }
  if (*rc != ZOK) {
    zkl__req_abort_locked(r);
    free(w->path);
    free(w);
    return NULL;
  }
  w->s = s;
  zkl__session_ref_locked(s);
  w->type = type;
  w->ops = ops;
  w->owner = owner;
  w->client = W_ARMING;
  w->wanted = true;
  zkl__list_push(&e->watches, &w->link);
  return w;
}

/* ZNOWATCHER: the client has taken it out to deliver its event, and
 * watcher() frees it. */
static void remove_locked(zkl_watch *w) {
  int wtype =
      w->type == ZKL_WATCH_CHILDREN ? ZWATCHTYPE_CHILD : ZWATCHTYPE_DATA;
  if (zkl__watch_leave_client(w->s->zh, w->path, wtype, watcher, w))
    w->client = W_GONE;
}

void zkl__watch_drop_locked(zkl_watch *w) {
  if (!w->wanted)
    return;
  w->wanted = false;
  if (w->client == W_ARMED)
    remove_locked(w);
  maybe_free_locked(w);
}

void zkl__watches_drop_all_locked(zkl_session *s) {
  zkl_engine *e = engine_of(s);
  zkl_link *n, *next;
  for (n = e->watches.next; n != &e->watches; n = next) {
    next = n->next; /* dropping may free this one, never another */
    zkl__watch_drop_locked(zkl__container_of(n, zkl_watch, link));
  }
}

void zkl__watches_forget_all_locked(zkl_session *s) {
  zkl_engine *e = engine_of(s);
  while (!zkl__list_empty(&e->watches)) {
    zkl_watch *w = zkl__container_of(e->watches.next, zkl_watch, link);
    w->wanted = false;
    w->client = W_GONE;
    maybe_free_locked(w);
  }
}

unsigned zkl__watches_count_locked(const zkl_session *s) {
  const zkl_engine *e = zkl__session_hooks_ctx_locked(s);
  return e ? zkl__list_length(&e->watches) : 0;
}
