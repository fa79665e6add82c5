/*
 * lock.c - the lock state machine, shared by the blocking and async faces.
 *
 * An attempt goes CREATING -> [LISTING <-> WATCHING] -> HELD -> RELEASING,
 * or ends FINISHED with a result. Round trips, counted:
 *   acquire, lock free:    1 (create and listing sent back to back; the
 *                            token is the create's own czxid)
 *   first use of a name:   +1 (the parents are created as containers,
 *                            pipelined with a second create and listing)
 *   handoff:               0 for a waiter whose predecessor was the lowest
 *                            node of its last listing: the predecessor's
 *                            deletion grants it without listing again (no
 *                            lower node can appear while ours exists)
 *   release:               1 (delete)
 * A watch on our own node (getData, sent when the create returns, never
 * waited for) tells a holder at once when someone deletes its node.
 *
 * Every completion and watcher checks that it still belongs to the current
 * round of its attempt: a cancel, timeout or new listing bumps the round and
 * makes in-flight answers stale. An abandoned attempt deletes its node and
 * drops its watch before its callback runs, or, when the connection is down,
 * leaves both to the session's background cleanup.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void (*zkl__hook_before_watch)(const char *pred_path);

static void finish_locked(zkl_attempt *att, int rc);
static void maybe_deliver_locked(zkl_attempt *att);
static void send_own_watch_locked(zkl_attempt *att);
static void relist_locked(zkl_attempt *att);

/* ----------------------------------------------------------- references */

void zkl__lock_unref_locked(zkl_lock *l) {
  zkl_session *s = l->s;
  if (--l->refs > 0)
    return;
  zkl__list_remove(&l->link);
  free(l->name);
  free(l->parent);
  free(l->info);
  free(l);
  zkl__session_unref_locked(s);
}

void zkl__attempt_unref_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  if (--att->refs > 0)
    return;
  /* Targets are notified exactly once; one never armed keeps its record. */
  if (att->acq.call)
    free(att->acq.call);
  if (att->rel.call)
    free(att->rel.call);
  free(att->node);
  free(att);
  zkl__lock_unref_locked(l);
}

/* Maps a synchronous refusal of the ZooKeeper client to our codes. */
static int refusal_rc(int rc) {
  if (rc == ZINVALIDSTATE)
    return ZKL_EEXPIRED;
  if (rc == ZMARSHALLINGERROR || rc == ZSYSTEMERROR)
    return ZKL_ENOMEM;
  return rc;
}

static void own_path(const zkl_attempt *att, char *buf) {
  snprintf(buf, ZKL_PATH_MAX, "%s/%s", att->l->parent, att->node);
}

static bool acquiring(const zkl_attempt *att) {
  return att->phase == ZKL_PH_CREATING || att->phase == ZKL_PH_RECOVERING ||
         att->phase == ZKL_PH_LISTING || att->phase == ZKL_PH_WATCHING;
}

/* Every phase change goes through here: the session counts its held locks,
 * and the lease clock runs while there is one. */
static void set_phase_locked(zkl_attempt *att, zkl_phase phase) {
  zkl_session *s = att->l->s;
  bool was = att->phase == ZKL_PH_HELD, is = phase == ZKL_PH_HELD;
  att->phase = phase;
  if (was == is)
    return;
  if (is) {
    if (s->held++ == 0)
      zkl__timer_kick_locked(s); /* start heartbeats and the lease clock */
  } else {
    s->held--;
  }
}

/* ----------------------------------------------------------- delivering */

static void notify_target_locked(zkl_lock *l, zkl_target *t, int kind, int rc,
                                 int64_t token) {
  if (!t->armed)
    return;
  t->armed = false;
  if (t->waiter) {
    t->waiter->rc = rc;
    t->waiter->token = token;
    t->waiter->done = true;
    pthread_cond_signal(&t->waiter->cond);
  } else if (t->call) {
    zkl_call *c = t->call;
    t->call = NULL;
    c->kind = kind;
    c->l = l;
    c->rc = rc;
    c->token = token;
    zkl__queue_call_locked(l->s, c);
  }
}

static void detach_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  if (l->att == att) {
    l->att = NULL;
    zkl__attempt_unref_locked(att);
  }
}

static void deliver_acquire_locked(zkl_attempt *att, int rc) {
  zkl_lock *l = att->l;
  int64_t token = rc == ZKL_OK ? att->czxid : 0;
  att->delivered = true;
  att->refs++; /* detach may drop the last reference */
  notify_target_locked(l, &att->acq, ZKL_CALL_ACQUIRE, rc, token);
  if (rc != ZKL_OK)
    detach_locked(att);
  zkl__attempt_unref_locked(att);
}

/* Deliver a decided result once the attempt's in-flight requests (its
 * cleanup among them) have settled; at once when disconnected, since they
 * then settle only when the client gives up a connection attempt. */
static void maybe_deliver_locked(zkl_attempt *att) {
  zkl_session *s = att->l->s;
  if (att->phase != ZKL_PH_FINISHED || att->delivered)
    return;
  if (att->pending > 0 && s->connected && !s->dead)
    return;
  deliver_acquire_locked(att, att->result);
}

static void grant_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  if (zkl__lease_expired_locked(l->s, zkl__now_ms())) {
    /* Nothing proves the session alive lately (a grant can come from a watch
     * event right after a long outage): list once more, and let that answer
     * renew the lease before holding. */
    relist_locked(att);
    return;
  }
  set_phase_locked(att, ZKL_PH_HELD);
  att->deadline_ms = 0;
  att->round++;
  zkl__unpark_locked(att);
  l->hold_count = 1;
  l->token = att->czxid;
  l->lost = false;
  deliver_acquire_locked(att, ZKL_OK);
}

static const char *lost_reason_text(int reason) {
  switch (reason) {
  case ZKL_LOST_NODE_DELETED:
    return "node deleted";
  case ZKL_LOST_LEASE_EXPIRED:
    return "lease expired";
  default:
    return "session expired";
  }
}

/* A held lock is lost. The notice is queued for the completion thread, or
 * appended to *direct for a caller that runs it itself (the timer thread,
 * when the lease runs out: the completion thread may wait on an
 * unreachable server for longer than the lease has left). */
static void lose_locked(zkl_attempt *att, int reason, zkl_call **direct) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  att->refs++; /* unpark and detach may each drop one */
  set_phase_locked(att, ZKL_PH_FINISHED);
  zkl__unpark_locked(att); /* a watch to re-arm after a reconnect, say */
  att->result = ZKL_ELOST;
  att->round++;
  l->hold_count = 0;
  l->token = 0;
  if (reason == ZKL_LOST_LEASE_EXPIRED && att->node) {
    /* The session may yet survive: the node must not stay at the head of
     * the queue as if it were still held. */
    char path[ZKL_PATH_MAX];
    own_path(att, path);
    zkl__cleanup_delete_locked(s, path);
  }
  if (!l->freed) {
    l->lost = true;
    if (l->lost_cb) {
      zkl_call *c = calloc(1, sizeof *c);
      if (c) {
        c->kind = ZKL_CALL_LOST;
        c->l = l;
        c->rc = reason;
        c->lost_cb = l->lost_cb;
        c->arg = l->lost_arg;
        if (direct) {
          l->refs++;
          c->next = *direct;
          *direct = c;
        } else {
          zkl__queue_call_locked(s, c);
        }
      } else {
        zkl__log("out of memory: lost notice for lock %s dropped", l->name);
      }
    }
  }
  zkl__log("lock %s lost (%s)", l->name, lost_reason_text(reason));
  detach_locked(att);
  zkl__attempt_unref_locked(att);
}

static void finish_release_locked(zkl_attempt *att, int rc) {
  zkl_lock *l = att->l;
  att->refs++; /* unpark and detach may each drop one */
  set_phase_locked(att, ZKL_PH_FINISHED);
  zkl__unpark_locked(att);
  att->result = rc;
  att->delivered = true;
  att->round++;
  notify_target_locked(l, &att->rel, ZKL_CALL_DONE, rc, 0);
  detach_locked(att);
  zkl__attempt_unref_locked(att);
}

/* Ends a request of an attempt: its completion may have been what the
 * attempt's decided result was waiting for. */
static void req_finish_locked(zkl_req *r) {
  zkl_attempt *att = r->att;
  att->refs++; /* the request's reference may be the last */
  zkl__req_done_locked(r);
  maybe_deliver_locked(att);
  zkl__attempt_unref_locked(att);
}

/* ---------------------------------------------------------------- watches */

static zkl_watch *watch_new_locked(zkl_attempt *att, int kind,
                                   const char *path) {
  zkl_session *s = att->l->s;
  zkl_watch *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  if (!(w->path = strdup(path))) {
    free(w);
    return NULL;
  }
  w->s = s;
  s->refs++;
  w->att = att;
  att->refs++;
  w->kind = kind;
  zkl__list_push(&s->watches, &w->link);
  return w;
}

void zkl__watch_maybe_free_locked(zkl_watch *w) {
  zkl_session *s = w->s;
  zkl_attempt *att = w->att;
  if (w->pins || w->get_inflight || w->registered || w->remove_inflight ||
      w->cleanup_queued)
    return;
  if (att->pred_watch == w)
    att->pred_watch = NULL;
  if (att->own_watch == w)
    att->own_watch = NULL;
  zkl__list_remove(&w->link);
  free(w->path);
  free(w);
  zkl__attempt_unref_locked(att);
  zkl__session_unref_locked(s);
}

void zkl__watch_cleanup_done_locked(zkl_watch *w, int rc) {
  w->cleanup_queued = false;
  if (rc == ZOK)
    w->registered = false; /* the client dropped it without calling it */
  zkl__watch_maybe_free_locked(w);
}

/* Drops a watch the attempt no longer wants. While its getData is still in
 * flight, that completion sees the record is stale and comes back here. */
static void drop_watch_locked(zkl_watch *w) {
  zkl_attempt *att = w->att;
  if (att->pred_watch == w)
    att->pred_watch = NULL;
  if (att->own_watch == w)
    att->own_watch = NULL;
  if (w->registered)
    zkl__cleanup_watch_locked(w->s, w);
  zkl__watch_maybe_free_locked(w);
}

static void own_node_gone_locked(zkl_attempt *att) {
  if (att->phase == ZKL_PH_HELD) {
    lose_locked(att, ZKL_LOST_NODE_DELETED, NULL);
  } else if (acquiring(att)) {
    /* Nothing left to delete: forget the node before finishing. */
    free(att->node);
    att->node = NULL;
    finish_locked(att, ZKL_ELOST);
  }
  /* RELEASING or FINISHED: we deleted it ourselves. */
}

static void on_pred_event_locked(zkl_attempt *att, zkl_watch *w, int type) {
  if (att->pred_watch != w || att->phase != ZKL_PH_WATCHING)
    return; /* stale */
  att->pred_watch = NULL;
  if (type == ZOO_DELETED_EVENT && att->pred_was_lowest)
    grant_locked(att);
  else
    relist_locked(att); /* a waiter that gave up, or a changed node */
}

static void on_own_event_locked(zkl_attempt *att, zkl_watch *w, int type) {
  if (att->own_watch != w)
    return;
  att->own_watch = NULL;
  if (type == ZOO_DELETED_EVENT)
    own_node_gone_locked(att);
  else if (att->phase == ZKL_PH_HELD || acquiring(att))
    send_own_watch_locked(att); /* data changed: watch again */
}

void zkl__pred_watcher(zhandle_t *zh, int type, int state, const char *path,
                       void *ctx) {
  zkl_watch *w = ctx;
  zkl_session *s = w->s;
  zkl_attempt *att;
  (void)zh;
  (void)state;
  (void)path;
  zkl__mark_zk_thread();
  if (type == ZOO_SESSION_EVENT)
    return; /* the session watcher handles those; the watch stays armed */
  zkl__enter_locked(s);
  att = w->att;
  att->refs++;
  w->pins++; /* whatever the event leads to, w is freed here, last */
  w->registered = false; /* watches fire once */
  if (w->kind == ZKL_WATCH_PRED)
    on_pred_event_locked(att, w, type);
  else
    on_own_event_locked(att, w, type);
  w->pins--;
  zkl__watch_maybe_free_locked(w);
  maybe_deliver_locked(att);
  zkl__attempt_unref_locked(att);
  zkl__leave(s);
}

static void own_get_done(int rc, const char *value, int len,
                         const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  zkl_watch *w = r->w;
  (void)value;
  (void)len;
  (void)stat;
  zkl__enter_req_locked(r, rc);
  w->pins++; /* dropping it below must not free it under us */
  w->get_inflight = false;
  if (rc == ZOK)
    w->registered = true;
  if (att->own_watch == w) {
    if (rc == ZNONODE) {
      att->own_watch = NULL;
      own_node_gone_locked(att);
    } else if (zkl__is_connection_loss(rc)) {
      att->own_watch = NULL;
      /* Re-armed after the reconnect, if the attempt still wants it: a
       * finished one (cancelled, timed out) must not wait for a reconnect
       * that may never come. */
      if (att->phase == ZKL_PH_HELD || acquiring(att))
        zkl__park_locked(att, ZKL_RESUME_OWN_WATCH);
    } else if (rc != ZOK) {
      att->own_watch = NULL;
      if (!zkl__is_session_over(rc))
        zkl__log("watch on own node of %s failed: %s", att->l->name,
                 zerror(rc));
    }
  } else if (w->registered) {
    drop_watch_locked(w);
  }
  w->pins--;
  zkl__watch_maybe_free_locked(w);
  req_finish_locked(r);
  zkl__leave(s);
}

/* Not waited for: it is sent when the create returns, in the same round
 * trip as the listing, and only ever reports bad news. */
static void send_own_watch_locked(zkl_attempt *att) {
  zkl_session *s = att->l->s;
  char path[ZKL_PATH_MAX];
  zkl_watch *w;
  zkl_req *r;
  int rc;
  if (!att->node || att->own_watch)
    return;
  own_path(att, path);
  w = watch_new_locked(att, ZKL_WATCH_OWN, path);
  r = w ? zkl__req_new(s, ZKL_RQ_OWN_GET, att) : NULL;
  if (!r) {
    if (w)
      zkl__watch_maybe_free_locked(w);
    zkl__log("out of memory: no watch on own node of %s", att->l->name);
    return;
  }
  r->w = w;
  w->get_inflight = true;
  att->own_watch = w;
  rc = zoo_awget(s->zh, path, zkl__pred_watcher, w, own_get_done, r);
  if (rc != ZOK) {
    w->get_inflight = false;
    att->own_watch = NULL;
    zkl__watch_maybe_free_locked(w);
    zkl__req_abort_locked(r);
  }
}

/* --------------------------------------------------------------- cleanup */

static void delete_done(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl__enter_req_locked(r, rc);
  if (zkl__is_connection_loss(rc))
    zkl__cleanup_delete_locked(s, r->path);
  else if (rc != ZOK && rc != ZNONODE && !zkl__is_session_over(rc))
    zkl__log("cannot delete %s: %s", r->path, zerror(rc));
  req_finish_locked(r);
  zkl__leave(s);
}

static void delete_own_locked(zkl_attempt *att) {
  zkl_session *s = att->l->s;
  char path[ZKL_PATH_MAX];
  zkl_req *r;
  own_path(att, path);
  if (s->connected && (r = zkl__req_new(s, ZKL_RQ_DELETE, att)) != NULL) {
    if ((r->path = strdup(path)) != NULL &&
        zoo_adelete(s->zh, path, -1, delete_done, r) == ZOK)
      return;
    zkl__req_abort_locked(r);
  }
  zkl__cleanup_delete_locked(s, path);
}

/* Removes what an abandoned attempt put in ZooKeeper. */
static void cleanup_attempt_locked(zkl_attempt *att) {
  zkl_session *s = att->l->s;
  if (s->dead || s->closed)
    return; /* the session's end took the node and the watches */
  if (att->pred_watch)
    drop_watch_locked(att->pred_watch);
  if (s->closing && s->owns_handle)
    return; /* zookeeper_close() is about to delete the node */
  if (att->node)
    delete_own_locked(att);
  else if (att->create_unknown && !att->create_inflight)
    zkl__cleanup_prefix_locked(s, att->l->parent, att->prefix);
  /* A create still in flight: create_done deletes what it made. */
}

static void finish_locked(zkl_attempt *att, int rc) {
  if (att->phase == ZKL_PH_FINISHED)
    return;
  set_phase_locked(att, ZKL_PH_FINISHED);
  att->result = rc;
  att->round++;
  att->deadline_ms = 0;
  zkl__unpark_locked(att);
  cleanup_attempt_locked(att);
  maybe_deliver_locked(att);
}

/* The connection dropped before the server answered. A try-once acquire is
 * one exchange with the server: it fails now rather than wait for a
 * reconnect that may take as long as the outage. Anything else waits. */
static void wait_reconnect_locked(zkl_attempt *att, unsigned resume) {
  if (att->try_once)
    finish_locked(att, ZKL_ECONNECT);
  else
    zkl__park_locked(att, resume);
}

/* ------------------------------------------------------ create and list */

static void list_done(int rc, const struct String_vector *children,
                      const void *data);
static void send_list_locked(zkl_attempt *att);

static void parent_done(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  (void)value;
  (void)stat;
  zkl__enter_req_locked(r, rc);
  /* ZNODEEXISTS is the usual answer. A refusal of its own (ZINVALIDACL for
   * a creator-only ACL without credentials, ZNOAUTH...) is kept: the create
   * behind it then fails with ZNONODE, which would hide the cause. */
  if (rc != ZOK && rc != ZNODEEXISTS && rc != ZNONODE &&
      !zkl__is_connection_loss(rc) && !zkl__is_session_over(rc))
    r->att->parent_err = rc;
  req_finish_locked(r);
  zkl__leave(s);
}

static void create_done(int rc, const char *value, const struct Stat *stat,
                        const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  zkl__enter_req_locked(r, rc);
  att->create_inflight = false;
  if (rc == ZOK) {
    const char *slash = strrchr(value, '/');
    free(att->node);
    att->node = strdup(slash ? slash + 1 : value);
    att->czxid = stat->czxid;
    att->create_unknown = false;
    if (!att->node) {
      /* We cannot name our own node: give it to the cleanup by prefix. */
      att->create_unknown = true;
      finish_locked(att, ZKL_ENOMEM);
    } else if (att->phase == ZKL_PH_FINISHED) {
      if (!s->dead && !(s->closing && s->owns_handle))
        delete_own_locked(att);
    } else {
      send_own_watch_locked(att);
    }
  } else if (zkl__is_connection_loss(rc)) {
    att->create_unknown = true;
    if (att->phase == ZKL_PH_FINISHED && !s->dead)
      zkl__cleanup_prefix_locked(s, att->l->parent, att->prefix);
  } else if (rc == ZNONODE) {
    att->create_nonode = true;
  } else if (!zkl__is_session_over(rc)) {
    att->create_err = rc;
  }
  req_finish_locked(r);
  zkl__leave(s);
}

/* Sends the create of our node and, right behind it, the listing of the
 * parent: ZooKeeper answers one session's requests in order, so the listing
 * already contains our node, and both answers arrive in one round trip. */
static void send_create_and_list_locked(zkl_attempt *att, bool with_parents) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  char path[ZKL_PATH_MAX];
  zkl_req *r;
  int rc;

  att->round++;
  set_phase_locked(att, ZKL_PH_CREATING);
  att->create_unknown = att->create_nonode = false;
  att->create_err = 0;
  att->parent_err = 0;
  if (with_parents) {
    /* /locks, /locks/a, /locks/a/b: containers, which the server removes
     * once their last child is gone. */
    size_t len = strlen(l->parent), i;
    for (i = 1; i <= len; i++) {
      if (i < len && l->parent[i] != '/')
        continue;
      memcpy(path, l->parent, i);
      path[i] = '\0';
      r = zkl__req_new(s, ZKL_RQ_PARENT, att);
      if (!r) {
        finish_locked(att, ZKL_ENOMEM);
        return;
      }
      /* /locks is shared by every lock: always open. */
      rc = zoo_acreate2(s->zh, path, NULL, -1,
                        i == strlen(ZKL_ROOT) ? &ZOO_OPEN_ACL_UNSAFE
                                              : zkl__acl(l->acl),
                        ZOO_CONTAINER, parent_done, r);
      if (rc != ZOK) {
        zkl__req_abort_locked(r);
        finish_locked(att, refusal_rc(rc));
        return;
      }
    }
  }
  snprintf(path, sizeof path, "%s/%s", l->parent, att->prefix);
  r = zkl__req_new(s, ZKL_RQ_CREATE, att);
  if (!r) {
    finish_locked(att, ZKL_ENOMEM);
    return;
  }
  {
    /* who we are, for zkl_participants() and zklock --list */
    char data[sizeof s->owner_data + ZKL_INFO_MAX + 8];
    int len = snprintf(data, sizeof data, "%s%s%s%s", s->owner_data,
                       l->info ? "info=" : "", l->info ? l->info : "",
                       l->info ? "\n" : "");
    rc = zoo_acreate2(s->zh, path, data, len, zkl__acl(l->acl),
                      ZOO_EPHEMERAL_SEQUENTIAL, create_done, r);
  }
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    finish_locked(att, refusal_rc(rc));
    return;
  }
  att->create_inflight = true;
  send_list_locked(att); /* on failure create_done cleans up */
}

/* Lists the parent, without a watch; list_done reads the answer by the
 * attempt's phase. */
static void send_list_locked(zkl_attempt *att) {
  zkl_session *s = att->l->s;
  zkl_req *r = zkl__req_new(s, ZKL_RQ_LIST, att);
  int rc = r ? zoo_aget_children(s->zh, att->l->parent, 0, list_done, r)
             : ZKL_ENOMEM;
  if (rc != ZOK) {
    if (r)
      zkl__req_abort_locked(r);
    finish_locked(att, refusal_rc(rc));
  }
}

static void relist_locked(zkl_attempt *att) {
  att->round++;
  set_phase_locked(att, ZKL_PH_LISTING);
  send_list_locked(att);
}

static void pred_get_done(int rc, const char *value, int len,
                          const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  zkl_watch *w = r->w;
  (void)value;
  (void)len;
  (void)stat;
  zkl__enter_req_locked(r, rc);
  w->pins++; /* dropping it below must not free it under us */
  w->get_inflight = false;
  if (rc == ZOK)
    w->registered = true;
  if (att->pred_watch != w || r->round != att->round ||
      att->phase != ZKL_PH_WATCHING) {
    if (w->registered)
      drop_watch_locked(w); /* the attempt moved on meanwhile */
  } else if (rc == ZOK) {
    /* Armed: wait for the predecessor to go. */
  } else if (rc == ZNONODE) {
    /* Gone between our listing and the watch; getData set no watch. */
    att->pred_watch = NULL;
    if (att->pred_was_lowest)
      grant_locked(att);
    else
      relist_locked(att);
  } else if (zkl__is_connection_loss(rc)) {
    att->pred_watch = NULL;
    wait_reconnect_locked(att, ZKL_RESUME_LIST);
  } else if (!zkl__is_session_over(rc)) {
    att->pred_watch = NULL;
    finish_locked(att, rc);
  }
  w->pins--;
  zkl__watch_maybe_free_locked(w);
  req_finish_locked(r);
  zkl__leave(s);
}

static void watch_pred_locked(zkl_attempt *att, const char *pred) {
  zkl_session *s = att->l->s;
  char path[ZKL_PATH_MAX];
  zkl_watch *w;
  zkl_req *r;
  int rc;
  att->round++;
  set_phase_locked(att, ZKL_PH_WATCHING);
  snprintf(path, sizeof path, "%s/%s", att->l->parent, pred);
  w = watch_new_locked(att, ZKL_WATCH_PRED, path);
  r = w ? zkl__req_new(s, ZKL_RQ_PRED_GET, att) : NULL;
  if (!r) {
    if (w)
      zkl__watch_maybe_free_locked(w);
    finish_locked(att, ZKL_ENOMEM);
    return;
  }
  r->w = w;
  w->get_inflight = true;
  att->pred_watch = w;
  if (zkl__hook_before_watch)
    zkl__hook_before_watch(path);
  /* getData, not exists: exists would leave a watch behind on a node that
   * is already gone. */
  rc = zoo_awget(s->zh, path, zkl__pred_watcher, w, pred_get_done, r);
  if (rc != ZOK) {
    w->get_inflight = false;
    att->pred_watch = NULL;
    zkl__watch_maybe_free_locked(w);
    zkl__req_abort_locked(r);
    finish_locked(att, refusal_rc(rc));
  }
}

static void evaluate_locked(zkl_attempt *att,
                            const struct String_vector *children) {
  zkl_session *s = att->l->s;
  zkl_standing st;
  int *dup = NULL, i;
  if (children->count > 0 &&
      !(dup = malloc(sizeof *dup * (size_t)children->count))) {
    finish_locked(att, ZKL_ENOMEM);
    return;
  }
  zkl__standing(children->data, children->count, att->node, att->prefix, &st,
                dup);
  /* A create that was retried after a lost reply can leave a second node
   * with our prefix: it must not stay in the queue. */
  for (i = 0; i < st.n_duplicates; i++) {
    char path[ZKL_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", att->l->parent,
             children->data[dup[i]]);
    zkl__cleanup_delete_locked(s, path);
  }
  if (!st.own_found) {
    /* Our node is gone (deleted by someone, or the session ended): never
     * win without a node. */
    free(att->node);
    att->node = NULL;
    finish_locked(att, ZKL_ELOST);
  } else if (st.n_before == 0) {
    grant_locked(att);
  } else if (att->try_once) {
    finish_locked(att, ZKL_EBUSY);
  } else {
    att->pred_was_lowest = st.n_before == 1;
    watch_pred_locked(att, children->data[st.pred]);
  }
  free(dup);
}

/* ---------------------------------------------------------- recovery */

static void start_recover_locked(zkl_attempt *att);

static void recover_get_done(int rc, const char *value, int len,
                             const struct Stat *stat, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  (void)value;
  (void)len;
  zkl__enter_req_locked(r, rc);
  if (r->round == att->round && att->phase == ZKL_PH_RECOVERING) {
    if (rc == ZOK && stat->ephemeralOwner == s->session_id) {
      /* The lost reply's node: adopt it. Its czxid is the token. */
      const char *slash = strrchr(r->path, '/');
      free(att->node);
      att->node = strdup(slash + 1);
      att->czxid = stat->czxid;
      att->create_unknown = false;
      if (!att->node) {
        att->create_unknown = true;
        finish_locked(att, ZKL_ENOMEM);
      } else {
        send_own_watch_locked(att);
        relist_locked(att);
      }
    } else if (rc == ZOK || rc == ZNONODE) {
      /* Not ours after all (another session's node, as in CURATOR-498),
       * or gone: start over under a fresh id, leaving it alone. */
      if (rc == ZOK)
        zkl__make_prefix(att->prefix);
      send_create_and_list_locked(att, false);
    } else if (zkl__is_connection_loss(rc)) {
      wait_reconnect_locked(att, ZKL_RESUME_RECOVER);
    } else if (!zkl__is_session_over(rc)) {
      finish_locked(att, rc);
    }
  }
  req_finish_locked(r);
  zkl__leave(s);
}

static void on_recover_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children) {
  zkl_session *s = att->l->s;
  const char *best = NULL;
  int32_t best_seq = 0, seq;
  int i;
  zkl_req *r;
  char path[ZKL_PATH_MAX];

  if (zkl__is_connection_loss(rc)) {
    wait_reconnect_locked(att, ZKL_RESUME_RECOVER);
    return;
  }
  if (rc == ZNONODE) {
    send_create_and_list_locked(att, true); /* no parent, so no node */
    return;
  }
  if (rc != ZOK) {
    if (!zkl__is_session_over(rc))
      finish_locked(att, rc);
    return;
  }
  for (i = 0; i < children->count; i++) {
    const char *c = children->data[i];
    if (strncmp(c, att->prefix, ZKL_PREFIX_LEN) != 0 ||
        !zkl__parse_seq(c, &seq))
      continue;
    if (!best || (int32_t)((uint32_t)seq - (uint32_t)best_seq) < 0) {
      best = c;
      best_seq = seq;
    }
  }
  if (!best) {
    send_create_and_list_locked(att, false); /* the create never happened */
    return;
  }
  /* Adopt it only if this session owns it: a lagging server can still list
   * a just-expired session's node. The listing that follows the adoption
   * deletes any duplicate. */
  snprintf(path, sizeof path, "%s/%s", att->l->parent, best);
  r = zkl__req_new(s, ZKL_RQ_RECOVER_GET, att);
  if (!r || !(r->path = strdup(path))) {
    if (r)
      zkl__req_abort_locked(r);
    finish_locked(att, ZKL_ENOMEM);
    return;
  }
  rc = zoo_aget(s->zh, path, 0, recover_get_done, r);
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    finish_locked(att, refusal_rc(rc));
  }
}

static void start_recover_locked(zkl_attempt *att) {
  att->round++;
  set_phase_locked(att, ZKL_PH_RECOVERING);
  send_list_locked(att);
}

static void on_created_listing_locked(zkl_attempt *att, int rc,
                                      const struct String_vector *children) {
  if (att->create_nonode) {
    /* No parent (first use, or a container reaped since): create the
     * parents and try again, a few times in case they keep vanishing. */
    if (att->parent_err)
      finish_locked(att, att->parent_err);
    else if (att->parent_rounds++ < 3)
      send_create_and_list_locked(att, true);
    else
      finish_locked(att, ZNONODE);
  } else if (att->create_err) {
    finish_locked(att, att->create_err);
  } else if (att->create_unknown) {
    wait_reconnect_locked(att, ZKL_RESUME_RECOVER);
  } else if (!att->node) {
    /* The create saw the session end: the session-over path decides. */
  } else if (rc == ZOK) {
    evaluate_locked(att, children);
  } else if (zkl__is_connection_loss(rc)) {
    wait_reconnect_locked(att, ZKL_RESUME_LIST);
  } else if (!zkl__is_session_over(rc)) {
    finish_locked(att, rc);
  }
}

static void list_done(int rc, const struct String_vector *children,
                      const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  zkl__enter_req_locked(r, rc);
  if (r->round == att->round) {
    switch (att->phase) {
    case ZKL_PH_CREATING:
      on_created_listing_locked(att, rc, children);
      break;
    case ZKL_PH_RECOVERING:
      on_recover_listing_locked(att, rc, children);
      break;
    case ZKL_PH_LISTING:
      if (rc == ZOK)
        evaluate_locked(att, children);
      else if (zkl__is_connection_loss(rc))
        wait_reconnect_locked(att, ZKL_RESUME_LIST);
      else if (!zkl__is_session_over(rc))
        finish_locked(att, rc);
      break;
    default:
      break;
    }
  }
  req_finish_locked(r);
  zkl__leave(s);
}

/* ------------------------------------------------------------- release */

static void release_done(int rc, const void *data) {
  zkl_req *r = (zkl_req *)data;
  zkl_session *s = r->s;
  zkl_attempt *att = r->att;
  zkl__enter_req_locked(r, rc);
  if (att->phase == ZKL_PH_RELEASING) {
    if (rc == ZOK || rc == ZNONODE || zkl__is_session_over(rc)) {
      finish_release_locked(att, ZKL_OK);
    } else if (zkl__is_connection_loss(rc)) {
      zkl__cleanup_delete_locked(s, r->path);
      finish_release_locked(att, ZKL_OK);
    } else {
      /* Refused (ZNOAUTH...): the node is still there, so still held. */
      set_phase_locked(att, ZKL_PH_HELD);
      att->l->hold_count = 1;
      att->l->token = att->czxid;
      notify_target_locked(att->l, &att->rel, ZKL_CALL_DONE, rc, 0);
    }
  }
  zkl__req_done_locked(r);
  zkl__leave(s);
}

static void start_release_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  char path[ZKL_PATH_MAX];
  zkl_req *r;
  set_phase_locked(att, ZKL_PH_RELEASING);
  att->round++;
  l->hold_count = 0;
  l->token = 0;
  own_path(att, path);
  if (s->connected && (r = zkl__req_new(s, ZKL_RQ_RELEASE, att)) != NULL) {
    if ((r->path = strdup(path)) != NULL &&
        zoo_adelete(s->zh, path, -1, release_done, r) == ZOK)
      return;
    zkl__req_abort_locked(r);
  }
  /* Disconnected: the lock is ours no longer; the node goes at the
   * reconnect, or with the session. */
  zkl__cleanup_delete_locked(s, path);
  finish_release_locked(att, ZKL_OK);
}

/* --------------------------------------------------- shared entry points */

int zkl__acquire_locked(zkl_lock *l, int timeout_ms, zkl_target *t) {
  zkl_session *s = l->s;
  zkl_attempt *att;
  int rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK)
    return rc;
  zkl__lease_enforce_locked(s); /* no reentrant hold on a lapsed lease */
  att = l->att;
  if (att) {
    if (att->phase != ZKL_PH_HELD)
      return ZKL_EINPROGRESS;
    /* Reentrant: one more hold on the same node and token. */
    l->hold_count++;
    t->armed = true;
    notify_target_locked(l, t, ZKL_CALL_ACQUIRE, ZKL_OK, l->token);
    return ZKL_OK;
  }
  if (timeout_ms == 0 && !s->connected)
    return ZKL_ECONNECT; /* no exchange with the server can happen now */
  att = calloc(1, sizeof *att);
  if (!att)
    return ZKL_ENOMEM;
  if (zkl__make_prefix(att->prefix) != ZKL_OK) {
    free(att);
    return ZKL_ESYSTEM;
  }
  att->l = l;
  l->refs++;
  att->refs = 1; /* l->att */
  l->att = att;
  l->lost = false;
  att->acq = *t;
  att->acq.armed = true;
  t->call = NULL; /* the attempt owns the record now */
  att->try_once = timeout_ms == 0;
  if (timeout_ms > 0) {
    att->deadline_ms = zkl__now_ms() + timeout_ms;
    zkl__timer_kick_locked(s);
  }
  if (s->connected)
    send_create_and_list_locked(att, false);
  else
    zkl__park_locked(att, ZKL_RESUME_LIST); /* nothing sent yet */
  return ZKL_OK;
}

int zkl__release_locked(zkl_lock *l, zkl_target *t) {
  zkl_session *s = l->s;
  zkl_attempt *att;
  if (s->closing)
    return ZKL_ECLOSED;
  /* A holder frozen past its lease that releases first thing on waking must
   * hear ZKL_ELOST, not ZKL_OK: someone else may have held the lock. */
  zkl__lease_enforce_locked(s);
  att = l->att;
  if (l->lost) {
    l->lost = false;
    return ZKL_ELOST;
  }
  if (s->dead)
    return s->dead; /* the session's end released everything */
  if (!att || (att->phase != ZKL_PH_HELD && att->phase != ZKL_PH_RELEASING))
    return ZKL_ENOTHELD;
  if (att->phase == ZKL_PH_RELEASING)
    return ZKL_EINPROGRESS;
  t->armed = true;
  if (l->hold_count > 1) {
    l->hold_count--;
    notify_target_locked(l, t, ZKL_CALL_DONE, ZKL_OK, 0);
    return ZKL_OK;
  }
  att->rel = *t;
  t->call = NULL;
  start_release_locked(att);
  return ZKL_OK;
}

int zkl__cancel_locked(zkl_lock *l) {
  zkl_attempt *att = l->att;
  if (!att || !acquiring(att))
    return ZKL_EIDLE;
  finish_locked(att, ZKL_ECANCELED);
  return ZKL_OK;
}

/* ------------------------------------------------------- session events */

void zkl__locks_resume_locked(zkl_session *s) {
  while (!zkl__list_empty(&s->parked)) {
    zkl_attempt *att =
        zkl__container_of(s->parked.next, zkl_attempt, park_link);
    unsigned resume = att->resume;
    att->refs++;
    att->resume = 0;
    zkl__unpark_locked(att);
    if (acquiring(att)) {
      if (resume & ZKL_RESUME_RECOVER)
        start_recover_locked(att);
      else if (resume & ZKL_RESUME_LIST)
        att->node ? relist_locked(att)
                  : send_create_and_list_locked(att, false);
    }
    if ((resume & ZKL_RESUME_OWN_WATCH) &&
        (att->phase == ZKL_PH_HELD || acquiring(att)))
      send_own_watch_locked(att);
    zkl__attempt_unref_locked(att);
  }
}

/* Visits every lock's current attempt; fn may detach it or free the lock,
 * never another lock. */
static void each_attempt_locked(zkl_session *s,
                                void (*fn)(zkl_attempt *att, void *ctx),
                                void *ctx) {
  zkl_link *n, *next;
  for (n = s->locks.next; n != &s->locks; n = next) {
    zkl_lock *l = zkl__container_of(n, zkl_lock, link);
    zkl_attempt *att = l->att;
    l->refs++; /* keeps n valid until next is read */
    if (att) {
      att->refs++;
      fn(att, ctx);
      zkl__attempt_unref_locked(att);
    }
    next = n->next;
    zkl__lock_unref_locked(l);
  }
}

static void session_over_one(zkl_attempt *att, void *ctx) {
  zkl_session *s = att->l->s;
  (void)ctx;
  switch (att->phase) {
  case ZKL_PH_HELD:
    lose_locked(att, ZKL_LOST_SESSION_EXPIRED, NULL);
    break;
  case ZKL_PH_RELEASING:
    finish_release_locked(att, ZKL_OK); /* the node went with the session */
    break;
  case ZKL_PH_FINISHED:
    if (!att->delivered)
      deliver_acquire_locked(att, att->result);
    break;
  default:
    set_phase_locked(att, ZKL_PH_FINISHED);
    att->result = s->dead;
    att->round++;
    zkl__unpark_locked(att);
    deliver_acquire_locked(att, att->result);
    break;
  }
}

static void lease_lost_one(zkl_attempt *att, void *ctx) {
  if (att->phase == ZKL_PH_HELD)
    lose_locked(att, ZKL_LOST_LEASE_EXPIRED, ctx);
}

void zkl__locks_lease_lost_locked(zkl_session *s, zkl_call **direct) {
  each_attempt_locked(s, lease_lost_one, direct);
}

/* Attempts still parked now can never resume: those of no lock any more
 * (freed, or moved on to a new attempt) are not visited above. */
static void unpark_all_locked(zkl_session *s) {
  while (!zkl__list_empty(&s->parked))
    zkl__unpark_locked(
        zkl__container_of(s->parked.next, zkl_attempt, park_link));
}

void zkl__locks_session_over_locked(zkl_session *s) {
  each_attempt_locked(s, session_over_one, NULL);
  unpark_all_locked(s);
}

static void close_one(zkl_attempt *att, void *ctx) {
  zkl_session *s = att->l->s;
  (void)ctx;
  if (acquiring(att)) {
    finish_locked(att, ZKL_ECLOSED);
  } else if (att->phase == ZKL_PH_HELD) {
    if (s->owns_handle) {
      att->l->hold_count = 0;
      att->l->token = 0;
      finish_release_locked(att, ZKL_OK); /* closing the session deletes it */
    } else {
      start_release_locked(att);
    }
  }
}

void zkl__locks_close_locked(zkl_session *s) {
  each_attempt_locked(s, close_one, NULL);
  unpark_all_locked(s); /* nothing is left to resume after a close */
}

typedef struct {
  int64_t now_ms;
  int64_t next_ms;
} expiry;

static void expire_one(zkl_attempt *att, void *ctx) {
  expiry *e = ctx;
  if (!acquiring(att) || att->deadline_ms == 0)
    return;
  if (att->deadline_ms <= e->now_ms)
    finish_locked(att, ZKL_ETIMEDOUT);
  else if (e->next_ms == 0 || att->deadline_ms < e->next_ms)
    e->next_ms = att->deadline_ms;
}

int64_t zkl__locks_expire_locked(zkl_session *s, int64_t now_ms) {
  expiry e = {now_ms, 0};
  each_attempt_locked(s, expire_one, &e);
  return e.next_ms;
}

/* ------------------------------------------------------------ public API */

int zkl_lock_new(zkl_lock **out, zkl_session *s, const char *name) {
  zkl_lock *l;
  int rc;
  if (!out || !s || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  l = calloc(1, sizeof *l);
  if (!l)
    return ZKL_ENOMEM;
  l->name = strdup(name);
  l->parent = malloc(strlen(ZKL_ROOT) + 1 + strlen(name) + 1);
  if (!l->name || !l->parent) {
    free(l->name);
    free(l->parent);
    free(l);
    return ZKL_ENOMEM;
  }
  sprintf(l->parent, "%s/%s", ZKL_ROOT, name);
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    free(l->name);
    free(l->parent);
    free(l);
    return rc;
  }
  l->s = s;
  l->refs = 1;
  s->refs++;
  zkl__list_push(&s->locks, &l->link);
  pthread_mutex_unlock(&s->mu);
  *out = l;
  return ZKL_OK;
}

void zkl_lock_free(zkl_lock *l) {
  zkl_session *s;
  zkl_attempt *att;
  if (!l)
    return;
  s = l->s;
  pthread_mutex_lock(&s->mu);
  l->freed = true;
  l->lost_cb = NULL;
  att = l->att;
  if (att && !s->closed) {
    if (acquiring(att))
      finish_locked(att, ZKL_ECLOSED);
    else if (att->phase == ZKL_PH_HELD)
      start_release_locked(att);
  }
  zkl__lock_unref_locked(l);
  zkl__unlock(s);
}

int zkl_lock_acquire_async(zkl_lock *l, int timeout_ms, zkl_acquire_cb cb,
                           void *arg) {
  zkl_target t = {0};
  int rc;
  if (!l || !cb || timeout_ms < -1)
    return ZKL_EINVAL;
  t.call = calloc(1, sizeof *t.call);
  if (!t.call)
    return ZKL_ENOMEM;
  t.call->acquire_cb = cb;
  t.call->arg = arg;
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__acquire_locked(l, timeout_ms, &t);
  pthread_mutex_unlock(&l->s->mu);
  if (rc != ZKL_OK)
    free(t.call);
  return rc;
}

int zkl_lock_release_async(zkl_lock *l, zkl_done_cb cb, void *arg) {
  zkl_target t = {0};
  int rc;
  if (!l)
    return ZKL_EINVAL;
  t.call = calloc(1, sizeof *t.call);
  if (!t.call)
    return ZKL_ENOMEM;
  t.call->done_cb = cb;
  t.call->arg = arg;
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__release_locked(l, &t);
  pthread_mutex_unlock(&l->s->mu);
  if (rc != ZKL_OK)
    free(t.call);
  return rc;
}

int zkl_lock_cancel(zkl_lock *l) {
  int rc;
  if (!l)
    return ZKL_EINVAL;
  pthread_mutex_lock(&l->s->mu);
  rc = l->s->closing ? ZKL_ECLOSED : zkl__cancel_locked(l);
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

void zkl_lock_on_lost(zkl_lock *l, zkl_lost_cb cb, void *arg) {
  if (!l)
    return;
  pthread_mutex_lock(&l->s->mu);
  l->lost_cb = cb;
  l->lost_arg = arg;
  pthread_mutex_unlock(&l->s->mu);
}

int64_t zkl_lock_token(const zkl_lock *l) {
  int64_t t;
  if (!l)
    return 0;
  pthread_mutex_lock(&l->s->mu);
  zkl__lease_enforce_locked(l->s); /* a lapsed hold reads as none */
  t = l->token;
  pthread_mutex_unlock(&l->s->mu);
  return t;
}

const char *zkl_lock_name(const zkl_lock *l) { return l ? l->name : NULL; }

int zkl_lock_set_acl(zkl_lock *l, int mode) {
  int rc;
  if (!l || (mode != ZKL_ACL_OPEN && mode != ZKL_ACL_CREATOR))
    return ZKL_EINVAL;
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK)
    l->acl = mode;
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}

int zkl_lock_set_owner_info(zkl_lock *l, const char *info) {
  char *copy = NULL;
  int rc;
  if (!l || zkl__validate_info(info) != ZKL_OK)
    return ZKL_EINVAL;
  if (info && *info && !(copy = strdup(info)))
    return ZKL_ENOMEM;
  pthread_mutex_lock(&l->s->mu);
  rc = zkl__session_usable_locked(l->s);
  if (rc == ZKL_OK) {
    free(l->info);
    l->info = copy;
    copy = NULL;
  }
  pthread_mutex_unlock(&l->s->mu);
  free(copy);
  return rc;
}

int zkl_lock_node_path(const zkl_lock *l, char *buf, size_t len) {
  int rc = ZKL_ENOTHELD;
  if (!l || !buf)
    return ZKL_EINVAL;
  pthread_mutex_lock(&l->s->mu);
  if (l->s->closing)
    rc = ZKL_ECLOSED;
  else if (l->att && l->att->node && l->att->phase != ZKL_PH_FINISHED) {
    int n = snprintf(buf, len, "%s/%s", l->parent, l->att->node);
    rc = n >= 0 && (size_t)n < len ? ZKL_OK : ZKL_EINVAL;
  }
  pthread_mutex_unlock(&l->s->mu);
  return rc;
}
