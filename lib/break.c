/* SPDX-License-Identifier: Apache-2.0 */
/*
 * break.c - breaking a stuck lock (zkl_name_break()): a holder's node marked,
 * then deleted after a grace, and only if it is still the node marked.
 *
 * The holder hears of it through the data watch it keeps on its own node
 * (engine.c): the mark (ZKL_BREAK_MARK, a newline, the node's old data, so
 * that zkl_name_list() and `zklock --list` still name the holder during
 * the grace; for an election candidate, whose data is read as its id, the
 * data written again as it is) runs its revoke callback, and the deletion
 * that follows ends its hold with ZKL_LOST_BROKEN.
 *
 * Which node is "the same": the one whose czxid zkl_name_list() read
 * when it picked it. The mark is written only under the version of a read
 * that shows that czxid, the delete under the version read after the mark;
 * a node that changed since is read again and deleted only if its czxid is
 * still the one picked. So a holder that let go is never hit, nor a newer
 * holder at the same path.
 *
 * Who is picked: the contenders zkl_name_list() says hold (the
 * registry's rule, kinds.c: a semaphore's lease by its own limit), or the
 * one named, looked for in every place of the name, as zkl_name_revoke() does,
 * with the downgraded readers that ride on it (kinds.h). A reader riding
 * on a write node is deleted before it, so that its holder is told before
 * the writers queued behind the write node are let in. The rule runs on the
 * queue as listed (participants.c): a holder that let go before its node was
 * read is not replaced by the next in line, which may have been granted after
 * the break began; the break then hits nothing.
 *
 * Everything runs on the caller's thread, which waits for each reply with
 * s->mu released. The completion thread broadcasts s->cond whenever it
 * leaves the session, so the grace is a timed wait on it, which ends early
 * once every node marked is gone (each has a data watch meanwhile).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "engine.h"
#include "agent.h"

/* How often a node that keeps changing under us is read again. */
#define TRIES 5

/* --------------------------------------------------------- one request */

enum { OP_GET, OP_SET, OP_DELETE };

/* One request's answer, copied for the caller waiting for it. */
typedef struct answer {
  bool done;
  int rc;
  struct Stat stat;
  char *data; /* OP_GET: a copy (len bytes), freed by the caller */
  int len;
} answer;

static void answer_free(answer *a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* The answer, copied for the caller waiting for it (zkl__leave()
 * broadcasts s->cond after the frame). */
static void answered_locked(zkl_req *r, const zkl_answer *ans) {
  answer *a = r->owner;
  int rc = ans->rc;
  if (rc == ZOK && ans->stat)
    a->stat = *ans->stat;
  if (rc == ZOK && r->kind == ZKL_RQ_BREAK && r->index == OP_GET) {
    a->len = ans->len > 0 ? ans->len : 0;
    if (!(a->data = malloc((size_t)a->len + 1)))
      rc = ZKL_ENOMEM;
    else if (a->len > 0)
      memcpy(a->data, ans->value, (size_t)a->len);
  }
  a->rc = rc;
  a->done = true;
}

/* A ZooKeeper verdict as zkl_name_break() returns it. */
static int code_locked(const zkl_session *s, int rc) {
  if (rc == ZINVALIDSTATE || zkl__is_session_over(rc))
    return s->dead ? s->dead : ZKL_EEXPIRED;
  if (rc == ZMARSHALLINGERROR || rc == ZSYSTEMERROR)
    return ZKL_ENOMEM;
  return rc;
}

/* Sends one request and waits for its answer; s->mu held. Returns the
 * answer's code (a->rc), ZooKeeper's or ours. */
static int ask_locked(zkl_session *s, answer *a, int op, const char *path,
                      const char *data, int len, int version) {
  zkl_req *r;
  int rc = zkl__session_usable_locked(s);
  memset(a, 0, sizeof *a);
  if (rc != ZKL_OK) /* expired or closing meanwhile: nothing more is sent */
    return a->rc = rc;
  if (!(r = zkl__req_new_locked(s, ZKL_RQ_BREAK)))
    return a->rc = ZKL_ENOMEM;
  r->owner = a;
  r->index = op;
  r->answered_locked = answered_locked;
  switch (op) {
  case OP_GET:
    rc = zoo_aget(s->zh, path, 0, zkl__on_data, r);
    break;
  case OP_SET:
    zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
    rc = zoo_aset(s->zh, path, data, len, version, zkl__on_stat, r);
    break;
  default:
    zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
    rc = zoo_adelete(s->zh, path, version, zkl__on_void, r);
    break;
  }
  if (rc != ZOK) {
    zkl__req_abort_locked(r);
    return a->rc = code_locked(s, rc);
  }
  while (!a->done)
    pthread_cond_wait(&s->cond, &s->mu);
  return a->rc;
}

/* ------------------------------------------------------------ the nodes */

/* A victim's rc before it has an outcome. */
#define UNTRIED 1 /* not marked: the session ended first */
#define MARKED 2  /* marked: its delete is to come */

typedef struct brk brk;

/* A node to break. */
typedef struct victim {
  brk *b;
  char path[ZKL_PATH_MAX];
  int64_t czxid;   /* read when picked: the node's identity */
  int32_t version; /* read after the mark: the delete's condition */
  int rc;          /* UNTRIED, MARKED, or the outcome */
  zkl_watch *watch;
  bool armed; /* the watch's read came back */
  bool gone;  /* deleted, or replaced, before our delete */
} victim;

/* Held by the call and by each watch record (which the client may call
 * after the call has returned). */
struct brk {
  unsigned refs;
  int count;
  victim v[];
};

static brk *brk_new(int count) {
  brk *b = calloc(1, sizeof *b + sizeof(victim) * (size_t)count);
  int i;
  if (!b)
    return NULL;
  b->refs = 1;
  b->count = count;
  for (i = 0; i < count; i++) {
    b->v[i].b = b;
    b->v[i].rc = UNTRIED;
  }
  return b;
}

static void brk_unref_locked(brk *b) {
  if (--b->refs == 0)
    free(b);
}

/* Whether participant p is a victim: the node named, wherever it is, and
 * a downgraded reader that holds by riding on it (kinds.h: it must not
 * outlive it); or, with no node named, every holder (riders included). */
static bool picked(const zkl_participant *p, const char *node) {
  const char *child = strrchr(p->node, '/') + 1;
  if (!node)
    return p->holds;
  return strcmp(child, node) == 0 || (p->holds && zkl__rides_on(child, node));
}

/* The victims, from the participants read before the call took the
 * session's mutex, in queue order. ZKL_ENOTHELD when there is none. */
static int pick(const zkl_participant *list, int count, const char *node,
                brk **out) {
  int i, n = 0;
  for (i = 0; i < count; i++)
    n += picked(&list[i], node);
  if (n == 0)
    return ZKL_ENOTHELD;
  if (!(*out = brk_new(n)))
    return ZKL_ENOMEM;
  for (i = 0, n = 0; i < count; i++) {
    if (picked(&list[i], node)) {
      victim *v = &(*out)->v[n++];
      snprintf(v->path, sizeof v->path, "%s", list[i].node);
      v->czxid = list[i].token; /* what was seen: aimed at that only */
    }
  }
  return ZKL_OK;
}

/* ------------------------------------------------------------ the watch */

static void watch_armed_locked(zkl_watch *w, int rc, const char *data,
                               int len, const struct Stat *stat,
                               const void *children) {
  victim *v = zkl__watch_owner(w);
  (void)data;
  (void)len;
  (void)children;
  v->armed = true;
  if (rc == ZOK && stat->czxid == v->czxid)
    v->version = stat->version; /* the read after the mark */
  else if (rc == ZOK || rc == ZNONODE)
    v->gone = true; /* it let go already (or, in theory, was replaced) */
  /* else: the delete tells */
}

static void watch_fired_locked(zkl_watch *w, int type) {
  victim *v = zkl__watch_owner(w);
  if (type == ZOO_DELETED_EVENT)
    v->gone = true; /* ends the grace early when it was the last */
  /* ZOO_CHANGED_EVENT: the delete's version check sees to it */
  v->watch = NULL;
  zkl__watch_drop_locked(w);
}

static void watch_release_locked(zkl_watch *w) {
  victim *v = zkl__watch_owner(w);
  brk_unref_locked(v->b);
}

static const zkl_watch_ops watch_ops = {
    watch_armed_locked, watch_fired_locked, watch_release_locked};

/* ------------------------------------------------------------- the steps */

/* Marks v's node and watches it; v->rc is MARKED after, or the outcome. */
static void mark_locked(zkl_session *s, victim *v) {
  answer got, set;
  char *mark;
  int rc, try, len;
  int32_t version = 0;
  zkl_ask_retry t;
  zkl__ask_retry_init_locked(s, &t);
  for (try = 0; try < TRIES; try++) {
    rc = ask_locked(s, &got, OP_GET, v->path, NULL, 0, -1);
    if (zkl__ask_again_locked(s, &t, &rc)) { /* the connection was lost */
      answer_free(&got);
      try--; /* a read again, not a change under us */
      continue;
    }
    if (rc != ZOK || got.stat.czxid != v->czxid) {
      answer_free(&got);
      v->rc = rc == ZOK || rc == ZNONODE ? ZKL_ENOTHELD : code_locked(s, rc);
      return;
    }
    /* A node marked already (a second break) keeps one mark; one whose
     * data others read as it is (an election's id: kinds.h keeps_data) is
     * written again unchanged, and its version is the mark. */
    len = zkl__is_break_mark(got.data, got.len) ||
                  zkl__node_keeps_data(strrchr(v->path, '/') + 1)
              ? got.len
              : ZKL_BREAK_MARK_LEN + 1 + got.len;
    if (!(mark = malloc((size_t)len))) {
      answer_free(&got);
      v->rc = ZKL_ENOMEM;
      return;
    }
    if (len == got.len) {
      memcpy(mark, got.data, (size_t)len);
    } else {
      memcpy(mark, ZKL_BREAK_MARK "\n", ZKL_BREAK_MARK_LEN + 1);
      memcpy(mark + ZKL_BREAK_MARK_LEN + 1, got.data, (size_t)got.len);
    }
    rc = ask_locked(s, &set, OP_SET, v->path, mark, len, got.stat.version);
    version = set.stat.version;
    free(mark);
    answer_free(&got);
    answer_free(&set);
    /* It changed between the read and the mark, or the mark's answer was
     * lost (it may have gone through: the read tells, and a node marked
     * already keeps one mark): again. */
    if (rc != ZBADVERSION && !zkl__ask_again_locked(s, &t, &rc))
      break;
  }
  if (rc != ZOK) {
    v->rc = rc == ZNONODE ? ZKL_ENOTHELD : code_locked(s, rc);
    return;
  }
  v->version = version;
  v->rc = MARKED;
  /* The read after the mark, and a watch that ends the grace early when
   * the node goes. Without one, the grace runs to its end. */
  v->b->refs++; /* the record's */
  v->watch = zkl__watch_arm_locked(s, ZKL_WATCH_DATA, ZKL_RQ_BREAK, v->path,
                                   &watch_ops, v, &rc);
  if (!v->watch) {
    v->b->refs--;
    return;
  }
  while (!v->armed)
    pthread_cond_wait(&s->cond, &s->mu);
}

/* Whether a downgraded reader riding on victim i was broken: its holder,
 * told, deletes the write node itself (rwlock.c), often before our delete
 * of it comes; that node was broken all the same, not let go. */
static bool rider_broken(const brk *b, int i) {
  const char *node = strrchr(b->v[i].path, '/') + 1;
  int j;
  for (j = 0; j < b->count; j++)
    if (j != i && b->v[j].rc == ZKL_OK &&
        zkl__rides_on(strrchr(b->v[j].path, '/') + 1, node))
      return true;
  return false;
}

static bool all_gone(const brk *b) {
  int i;
  for (i = 0; i < b->count; i++)
    if (b->v[i].rc == MARKED && !b->v[i].gone)
      return false;
  return true;
}

static void grace_locked(zkl_session *s, brk *b, int grace_ms) {
  int64_t deadline = zkl__now_ms() + grace_ms;
  while (!all_gone(b) && zkl__session_usable_locked(s) == ZKL_OK &&
         zkl__now_ms() < deadline)
    zkl__cond_wait_until(&s->cond, &s->mu, deadline);
}

/* Deletes v's node if it is still the node marked. */
static void delete_locked(zkl_session *s, victim *v) {
  answer a;
  int rc, try;
  bool lost = false; /* a delete's answer was lost: it may have gone through */
  zkl_ask_retry t;
  zkl__ask_retry_init_locked(s, &t);
  for (try = 0; try < TRIES; try++) {
    if (v->gone) {
      /* it let go within the grace; or, after a lost answer, who deleted
       * it is not known: the delete's outcome stays unknown */
      v->rc = lost ? ZCONNECTIONLOSS : ZKL_ENOTHELD;
      return;
    }
    rc = ask_locked(s, &a, OP_DELETE, v->path, NULL, 0, v->version);
    answer_free(&a);
    if (zkl__ask_again_locked(s, &t, &rc)) {
      lost = true;
      try--; /* the same delete again, not a change under us */
    } else if (rc != ZBADVERSION)
      break;
    /* Written since the mark (a revoke, another break), or the delete's
     * answer lost: the same node? */
    for (;;) {
      rc = ask_locked(s, &a, OP_GET, v->path, NULL, 0, -1);
      if (!zkl__ask_again_locked(s, &t, &rc))
        break;
      answer_free(&a);
    }
    if (rc == ZOK && a.stat.czxid == v->czxid)
      v->version = a.stat.version;
    else if (rc == ZOK || rc == ZNONODE)
      v->gone = true; /* replaced, or gone */
    answer_free(&a);
    if (rc != ZOK && rc != ZNONODE)
      break;
  }
  if (rc == ZOK)
    v->rc = ZKL_OK;
  else if (rc == ZNONODE)
    v->rc = ZKL_ENOTHELD;
  else
    v->rc = code_locked(s, rc);
}

/* ---------------------------------------------------------------- entry */

int zkl_name_break(zkl_session *s, const char *name, const char *node,
                   int grace_ms, zkl_break_cb cb, void *arg) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_break(s, name, node, grace_ms, cb, arg);
  zkl_participant *list = NULL;
  brk *b = NULL;
  int32_t seq;
  int rc, i, count = 0, place, first_error = ZKL_OK;
  bool broken = false, contender_like = false;
  if (!s || grace_ms < 0 || zkl__validate_name(name) != ZKL_OK)
    return ZKL_EINVAL;
  /* A node must be shaped as a contender's of one of the name's places. */
  for (place = 0; node && place < ZKL_PLACE_COUNT; place++) {
    zkl_nodes which = {(zkl_place)place, ZKL_FAMILIES_ALL};
    if (zkl__node_kind_of(node, &which, &seq) >= 0)
      contender_like = true;
  }
  if (node && (!*node || strchr(node, '/') ||
               strlen(node) >= ZKL_PATH_MAX / 2 || !contender_like))
    return ZKL_EINVAL; /* no contender's node */
  if (zkl__on_zk_thread())
    return ZKL_EDEADLK;
  /* Who holds, by the registry's rule, or where the named node is; after
   * a sync, so that a server behind the leader does not hide a holder (a
   * downgrade's read node while its write node is seen: ask.h). */
  rc = zkl__participants_ask(s, name, &list, &count, true);
  if (rc != ZKL_OK)
    return rc;
  pthread_mutex_lock(&s->mu);
  rc = zkl__session_usable_locked(s);
  if (rc == ZKL_OK && !zkl__engine_of_locked(s)) /* for the watches */
    rc = ZKL_ENOMEM;
  if (rc == ZKL_OK)
    rc = pick(list, count, node, &b);
  zkl_name_list_free(list);
  if (rc != ZKL_OK) {
    zkl__unlock(s);
    return rc;
  }
  for (i = 0; i < b->count && zkl__session_usable_locked(s) == ZKL_OK; i++)
    mark_locked(s, &b->v[i]);
  grace_locked(s, b, grace_ms);
  /* Deleted from the last to the first: a downgraded reader goes before
   * the write node it rides on, whose deletion lets the writers queued
   * behind it in (one session's requests are applied in order). */
  for (i = b->count - 1; i >= 0; i--) {
    victim *v = &b->v[i];
    if (v->rc == MARKED)
      delete_locked(s, v);
    else if (v->rc == UNTRIED) /* the session ended or closed first */
      v->rc = zkl__session_usable_locked(s) != ZKL_OK
                  ? zkl__session_usable_locked(s)
                  : ZKL_ECLOSED;
    if (v->watch) {
      zkl__watch_drop_locked(v->watch); /* its record may outlive us */
      v->watch = NULL;
    }
  }
  for (i = 0; i < b->count; i++) {
    victim *v = &b->v[i];
    if (v->rc == ZKL_ENOTHELD && rider_broken(b, i))
      v->rc = ZKL_OK; /* it went with its reader (see rider_broken) */
    if (v->rc == ZKL_OK)
      broken = true;
    else if (v->rc != ZKL_ENOTHELD && first_error == ZKL_OK)
      first_error = v->rc;
  }
  /* The report, with no lock held; b is ours until unreferenced. */
  pthread_mutex_unlock(&s->mu);
  for (i = 0; cb && i < b->count; i++)
    cb(s, b->v[i].rc, b->v[i].path, arg);
  pthread_mutex_lock(&s->mu);
  brk_unref_locked(b);
  zkl__unlock(s);
  if (first_error != ZKL_OK)
    return first_error;
  return broken ? ZKL_OK : ZKL_ENOTHELD;
}
