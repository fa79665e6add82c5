/* SPDX-License-Identifier: Apache-2.0 */
/*
 * leader.c - who leads an election, for anyone: a one-shot question, and a
 * watch that tells whenever the leader changes.
 *
 * The leader is the first latch node of /locks/NAME (election.c); its data
 * is its id and its czxid the epoch. The watch keeps one ZooKeeper watch at
 * a time: a data watch on the leader's node (it fires when that node goes:
 * then look again), or, while nobody stands, a child watch on the election
 * (it fires when someone joins). No polling, and candidates queued behind
 * the leader do not wake it.
 *
 *   LISTING -> WATCHING (a leader: its node watched) | JOINING (nobody: the
 *              election watched) | SUSPENDED (connection lost)
 *   WATCHING, JOINING -> LISTING (the watch fired)
 *   SUSPENDED -> LISTING (reconnected)
 *   any -> DONE (session expired or closed, an error, or freed)
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "engine.h"
#include "agent.h"

/* A leader is the first candidate of the election's queue. */
static const zkl_nodes candidates = {ZKL_PLACE_NAME,
                                     1u << ZKL_FAMILY_ELECTION};

struct zkl_leader_watch {
  zkl_observer obs;
  zkl_session *s; /* reference */
  unsigned refs;  /* user + requests + watch records + queued calls */
  bool freed;
  char queue[sizeof ZKL_ROOT + ZKL_NAME_MAX + 1]; /* /locks/NAME, /a/b */
  zkl_leader_cb cb;
  void *arg;
  enum { LW_LISTING, LW_WATCHING, LW_JOINING, LW_SUSPENDED, LW_DONE } state;
  unsigned round;
  zkl_watch *w;
  bool told;    /* something was told: what follows is told on change only */
  bool had;     /* ... and it was a leader: */
  char id[ZKL_ID_MAX + 1];
  int64_t token;
};

/* A change to tell, run on the completion thread. */
typedef struct leader_call {
  zkl_call base;
  zkl_leader_watch *lw; /* reference */
  int rc;
  char id[ZKL_ID_MAX + 1];
  int64_t token;
} leader_call;

static void lw_unref_locked(zkl_leader_watch *lw) {
  zkl_session *s = lw->s;
  if (--lw->refs > 0)
    return;
  free(lw);
  zkl__session_unref_locked(s);
}

static void call_run(zkl_call *c) {
  leader_call *lc = (leader_call *)c;
  zkl_leader_watch *lw = lc->lw;
  zkl_leader_cb cb;
  void *arg;
  /* Not once zkl_leader_watch_free() returned: read under the lock. */
  pthread_mutex_lock(&lw->s->mu);
  cb = lw->freed ? NULL : lw->cb;
  arg = lw->arg;
  pthread_mutex_unlock(&lw->s->mu);
  if (cb)
    cb(lw, lc->rc, lc->rc == ZKL_OK ? lc->id : NULL, lc->token, arg);
}

static void call_release_locked(zkl_call *c) {
  leader_call *lc = (leader_call *)c;
  lw_unref_locked(lc->lw);
  free(lc);
}

static void tell_locked(zkl_leader_watch *lw, int rc, const char *id,
                        int len, int64_t token) {
  leader_call *lc;
  if (rc == ZKL_OK) {
    if (len > ZKL_ID_MAX)
      len = ZKL_ID_MAX;
    if (lw->told && lw->had && lw->token == token)
      return; /* the same leader */
    memcpy(lw->id, id, (size_t)len);
    lw->id[len] = '\0';
    lw->token = token;
    lw->had = true;
  } else if (rc == ZKL_ENOTHELD) {
    if (lw->told && !lw->had)
      return; /* still nobody */
    lw->had = false;
  }
  lw->told = true;
  if (lw->freed || !(lc = calloc(1, sizeof *lc)))
    return;
  lc->base.run = call_run;
  lc->base.release_locked = call_release_locked;
  lc->lw = lw;
  lw->refs++;
  lc->rc = rc;
  if (rc == ZKL_OK)
    memcpy(lc->id, lw->id, sizeof lc->id);
  lc->token = token;
  zkl__queue_call_locked(lw->s, &lc->base);
}

static void drop_watch_locked(zkl_leader_watch *lw) {
  if (lw->w) {
    zkl__watch_drop_locked(lw->w);
    lw->w = NULL;
  }
}

/* Ends the watch: tells rc last (unless freed). */
static void finish_locked(zkl_leader_watch *lw, int rc) {
  if (lw->state == LW_DONE)
    return;
  lw->state = LW_DONE;
  lw->round++;
  drop_watch_locked(lw);
  zkl__observer_remove_locked(&lw->obs);
  tell_locked(lw, rc, NULL, 0, 0);
}

static void list_locked(zkl_leader_watch *lw);

/* A reply or event said the connection dropped, or a code. */
static void trouble_locked(zkl_leader_watch *lw, int rc) {
  if (zkl__is_connection_loss(rc)) {
    lw->state = LW_SUSPENDED;
    lw->round++;
    drop_watch_locked(lw);
    if (lw->s->connected)
      list_locked(lw); /* reconnected already */
  } else if (zkl__is_session_over(rc)) {
    finish_locked(lw, ZKL_EEXPIRED);
  } else {
    finish_locked(lw, rc);
  }
}

/* ------------------------------------------------------------- watches */

static void armed_locked(zkl_watch *w, int rc, const char *data, int len,
                         const struct Stat *stat, const void *children) {
  zkl_leader_watch *lw = zkl__watch_owner(w);
  const struct String_vector *list = children;
  if (lw->w != w)
    return; /* dropped meanwhile */
  if (lw->state == LW_WATCHING) {
    if (rc == ZOK)
      tell_locked(lw, ZKL_OK, data ? data : "", data ? len : 0, stat->czxid);
    else if (rc == ZNONODE)
      list_locked(lw); /* gone before the watch: look again */
    else
      trouble_locked(lw, rc);
  } else if (lw->state == LW_JOINING) {
    /* The election (a child watch) or its parent's creation (an exists
     * watch) is watched; if someone came meanwhile, look now. */
    zkl_queue q;
    if (rc != ZOK && rc != ZNONODE) {
      trouble_locked(lw, rc);
    } else if (rc == ZNONODE || (list == NULL && stat != NULL)) {
      list_locked(lw); /* the parent vanished, or appeared */
    } else if (list &&
               zkl__queue_build(list->data, list->count, &candidates, NULL,
                                NULL, &q) == ZKL_OK) {
      if (q.count > 0)
        list_locked(lw);
      zkl__queue_free(&q);
    }
  }
}

static void fired_locked(zkl_watch *w, int type) {
  zkl_leader_watch *lw = zkl__watch_owner(w);
  (void)type;
  if (lw->w == w)
    list_locked(lw);
}

static void released_locked(zkl_watch *w) {
  zkl_leader_watch *lw = zkl__watch_owner(w);
  if (lw->w == w)
    lw->w = NULL;
  lw_unref_locked(lw);
}

static const zkl_watch_ops watch_ops = {armed_locked, fired_locked,
                                        released_locked};

static void arm_locked(zkl_leader_watch *lw, int type, const char *path) {
  int rc;
  lw->refs++; /* the record's */
  lw->w = zkl__watch_arm_locked(lw->s, type, ZKL_RQ_QUERY, path, &watch_ops,
                                lw, &rc);
  if (!lw->w) {
    lw->refs--;
    finish_locked(lw, rc);
  }
}

/* -------------------------------------------------------------- listing */

static void listed_locked(void *owner, const zkl_reply *rp) {
  zkl_leader_watch *lw = owner;
  zkl_queue q;
  char path[ZKL_PATH_MAX];
  if (rp->round == lw->round && lw->state == LW_LISTING) {
    if (rp->rc != ZOK && rp->rc != ZNONODE) {
      trouble_locked(lw, rp->rc);
    } else if (rp->rc == ZNONODE) {
      /* no election yet: wait for its parent to be made */
      tell_locked(lw, ZKL_ENOTHELD, NULL, 0, 0);
      lw->state = LW_JOINING;
      arm_locked(lw, ZKL_WATCH_EXISTS, lw->queue);
    } else if (zkl__queue_build(rp->children->data, rp->children->count,
                                &candidates, NULL, NULL, &q) != ZKL_OK) {
      finish_locked(lw, ZKL_ENOMEM);
    } else {
      if (q.count == 0) {
        tell_locked(lw, ZKL_ENOTHELD, NULL, 0, 0);
        lw->state = LW_JOINING;
        arm_locked(lw, ZKL_WATCH_CHILDREN, lw->queue);
      } else {
        snprintf(path, sizeof path, "%s/%s", lw->queue, q.entries[0].name);
        lw->state = LW_WATCHING;
        arm_locked(lw, ZKL_WATCH_DATA, path);
      }
      zkl__queue_free(&q);
    }
  }
  lw_unref_locked(lw); /* the request's */
}

static const zkl_io_ops io_ops = {listed_locked};

static void list_locked(zkl_leader_watch *lw) {
  int rc;
  lw->state = LW_LISTING;
  lw->round++;
  drop_watch_locked(lw);
  lw->refs++; /* the request's */
  rc = zkl__io_list_locked(lw->s, ZKL_RQ_LIST, lw->queue, &io_ops, lw, lw->round);
  if (rc != ZKL_OK) {
    lw->refs--;
    finish_locked(lw, rc);
  }
}

static void event_locked(zkl_observer *o, zkl_att_event ev, int code) {
  zkl_leader_watch *lw = zkl__container_of(o, zkl_leader_watch, obs);
  if (ev == ZKL_EV_CONNECTED && lw->state == LW_SUSPENDED)
    list_locked(lw);
  else if (ev == ZKL_EV_OVER)
    finish_locked(lw, code);
  else if (ev == ZKL_EV_CLOSE)
    finish_locked(lw, ZKL_ECLOSED);
}

/* ---------------------------------------------------------- public API */

int zkl_leader_watch_new(zkl_leader_watch **out, zkl_session *s,
                         const char *name, zkl_leader_cb cb, void *arg) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_leader_watch_new(out, s, name, cb, arg);
  zkl_leader_watch *lw;
  zkl_engine *e;
  int rc;
  if (!out || !s || !cb || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  if (!(lw = calloc(1, sizeof *lw)))
    return ZKL_ENOMEM;
  zkl__name_path(lw->queue, sizeof lw->queue, name, NULL);
  lw->cb = cb;
  lw->arg = arg;
  lw->s = s;
  lw->obs.event_locked = event_locked;
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK && !(e = zkl__engine_of_locked(s)))
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    pthread_mutex_unlock(&s->mu);
    free(lw);
    return rc;
  }
  zkl__session_ref_locked(s);
  lw->refs = 1;
  zkl__observer_add_locked(e, &lw->obs);
  if (s->connected)
    list_locked(lw);
  else
    lw->state = LW_SUSPENDED;
  pthread_mutex_unlock(&s->mu);
  *out = lw;
  return ZKL_OK;
}

void zkl_leader_watch_free(zkl_leader_watch *lw) {
  zkl_session *s;
  if (!lw || zkl__remote_leader_watch_free(lw))
    return;
  s = lw->s;
  pthread_mutex_lock(&s->mu);
  lw->freed = true;
  finish_locked(lw, ZKL_ECLOSED);
  lw_unref_locked(lw);
  zkl__unlock(s);
}

/* ------------------------------------------------------------ one shot */

typedef struct leader_ask {
  zkl_ask ask; /* first: the answers come to it */
  bool listed; /* the listing is done: the leader's data is asked */
  char first[ZKL_PATH_MAX]; /* the leader's node, after the listing */
  char id[ZKL_ID_MAX + 1];
  int64_t token;
} leader_ask;

static void ask_replied_locked(zkl_ask *ask, int index, const zkl_reply *rp) {
  leader_ask *a = (leader_ask *)ask;
  zkl_queue q;
  int rc = rp->rc;
  (void)index;
  if (rc == ZOK && !a->listed) {
    rc = zkl__queue_build(rp->children->data, rp->children->count,
                          &candidates, NULL, NULL, &q);
    if (rc == ZKL_OK) {
      if (q.count > 0)
        snprintf(a->first, sizeof a->first, "%s/%s", rp->path,
                 q.entries[0].name);
      else
        rc = ZKL_ENOTHELD;
      zkl__queue_free(&q);
    }
  } else if (rc == ZOK) {
    int len = rp->len > ZKL_ID_MAX ? ZKL_ID_MAX : rp->len;
    if (len > 0)
      memcpy(a->id, rp->value, (size_t)len);
    a->id[len > 0 ? len : 0] = '\0';
    a->token = rp->stat->czxid;
  } else if (rc == ZNONODE) {
    rc = ZKL_ENOTHELD; /* no election, or its leader left meanwhile */
  } else {
    rc = zkl__ask_code(rc);
  }
  if (rc != ZKL_OK && ask->rc == ZKL_OK)
    ask->rc = rc;
}

int zkl_name_get_leader(zkl_session *s, const char *name, char *id, size_t len,
                        int64_t *token) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_get_leader(s, name, id, len, token);
  char queue[sizeof ZKL_ROOT + ZKL_NAME_MAX + 1];
  leader_ask a;
  zkl_ask_retry t;
  int rc;
  if (!s || (id && len == 0) || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  zkl__name_path(queue, sizeof queue, name, NULL);
  if ((rc = zkl__ask_enter(s)) != ZKL_OK)
    return rc;
  zkl__ask_retry_init_locked(s, &t);
  do {
    memset(&a, 0, sizeof a);
    rc = zkl__ask_init(&a.ask, s, ask_replied_locked);
    if (rc != ZKL_OK)
      break;
    zkl__ask_send_locked(&a.ask, ZKL_ASK_LIST, queue, NULL, 0, 0);
    rc = zkl__ask_wait_locked(&a.ask);
    a.listed = true;
    if (rc == ZKL_OK) {
      zkl__ask_send_locked(&a.ask, ZKL_ASK_GET, a.first, NULL, 0, 0);
      rc = zkl__ask_wait_locked(&a.ask);
    }
    zkl__ask_destroy(&a.ask);
  } while (zkl__ask_again_locked(s, &t, &rc));
  zkl__ask_leave(s);
  if (rc != ZKL_OK)
    return rc;
  if (id)
    snprintf(id, len, "%s", a.id);
  if (token)
    *token = a.token;
  return ZKL_OK;
}
