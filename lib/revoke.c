/* SPDX-License-Identifier: Apache-2.0 */
/*
 * revoke.c - asking holders to let go, as Curator's Revoker does: the bytes
 * __REVOKE__ written into a holder's node. The holder already keeps a data
 * watch on its own node (engine.c), so the request reaches it at no cost of
 * a new watch, and its revoke callback decides what to do.
 *
 * Whom to ask is read as zkl_name_list() reads it (participants.c,
 * through the registry): every holder by its kind's rule, or the contender
 * named, wherever under the name it waits, with the downgraded readers
 * that hold by riding on it (kinds.h: after a downgrade the write node
 * stays, and nobody watches it any more; the read side does). The listing
 * follows a sync, so that a server behind the leader cannot hide a holder
 * (participants.c). Nothing else under the name is ever written.
 *
 * An election candidate's node is not given the bytes: its data is its id,
 * which zkl_name_get_leader(), `zklock --leader` and Curator's LeaderLatch read
 * as it is (kinds.h keeps_data). It is read, and written again unchanged:
 * the new version is the request its candidate hears.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ask.h"
#include "engine.h"
#include "agent.h"

#define REVOKE_DATA "__REVOKE__"

typedef struct revoking {
  zkl_ask ask; /* first: the answers come to it */
  int asked;   /* writes that found their node */
  bool reading; /* the answers are reads of nodes that keep their data */
  char **kept;  /* kept[i]: participant i's data read (kept_len[i] bytes),
                   to write again; NULL when not read (or gone) */
  int *kept_len;
} revoking;

static void written_locked(zkl_ask *a, int index, const zkl_reply *rp) {
  revoking *r = (revoking *)a;
  if (r->reading) {
    if (rp->rc == ZOK) {
      int len = rp->len > 0 ? rp->len : 0;
      if (!(r->kept[index] = malloc((size_t)len + 1))) {
        if (a->rc == ZKL_OK)
          a->rc = ZKL_ENOMEM;
        return;
      }
      if (len > 0)
        memcpy(r->kept[index], rp->value, (size_t)len);
      r->kept_len[index] = len;
    } else if (rp->rc != ZNONODE && a->rc == ZKL_OK) {
      a->rc = zkl__ask_code(rp->rc);
    }
    return;
  }
  if (rp->rc == ZOK)
    r->asked++;
  else if (rp->rc != ZNONODE && a->rc == ZKL_OK) /* ZNONODE: it left */
    a->rc = zkl__ask_code(rp->rc);
}

/* Whether participant p is asked: every holder, or the one named with the
 * downgraded readers that hold riding on it. */
static bool picked(const zkl_participant *p, const char *node) {
  const char *child = strrchr(p->node, '/') + 1;
  return node ? strcmp(child, node) == 0 ||
                    (p->holds && zkl__rides_on(child, node))
              : p->holds;
}

/* The nodes that keep their data are read first, at once (one round trip
 * more), so that their writes below write it again. */
static int read_kept_locked(revoking *r, const zkl_participant *list, int count,
                            const char *node) {
  int i, n = 0;
  for (i = 0; i < count; i++)
    if (picked(&list[i], node) &&
        zkl__node_keeps_data(strrchr(list[i].node, '/') + 1))
      n++;
  if (n == 0)
    return ZKL_OK;
  r->kept = calloc((size_t)count, sizeof *r->kept);
  r->kept_len = calloc((size_t)count, sizeof *r->kept_len);
  if (!r->kept || !r->kept_len)
    return ZKL_ENOMEM;
  r->reading = true;
  for (i = 0; i < count; i++)
    if (picked(&list[i], node) &&
        zkl__node_keeps_data(strrchr(list[i].node, '/') + 1) &&
        zkl__ask_send_locked(&r->ask, ZKL_ASK_GET, list[i].node, NULL, 0, i) !=
            ZKL_OK)
      break;
  n = zkl__ask_wait_locked(&r->ask);
  r->reading = false;
  return n;
}

/* A child name that a contender's node can have, in some place of a name
 * (kinds.h): anything else is no contender, whatever is there. */
static bool contender_name(const char *node) {
  int32_t seq;
  int p;
  if (!*node || strchr(node, '/'))
    return false;
  for (p = 0; p < ZKL_PLACE_COUNT; p++) {
    zkl_nodes which = {(zkl_place)p, ZKL_FAMILIES_ALL};
    if (zkl__node_kind_of(node, &which, &seq) >= 0)
      return true;
  }
  return false;
}

/* One try: the contenders read (after a sync), those that keep their data
 * read, the writes; with s->mu held. Everything it allocates is freed. */
static int revoke_locked(zkl_session *s, const char *name, const char *node) {
  zkl_participant *list = NULL;
  revoking r;
  int count = 0, rc, i;
  rc = zkl__participants_locked(s, name, &list, &count, true);
  memset(&r, 0, sizeof r);
  if (rc == ZKL_OK)
    rc = zkl__ask_init(&r.ask, s, written_locked);
  if (rc == ZKL_OK) {
    rc = read_kept_locked(&r, list, count, node);
    for (i = 0; rc == ZKL_OK && i < count; i++) {
      if (!picked(&list[i], node))
        continue;
      if (r.kept && r.kept[i]) /* written again as it is */
        rc = zkl__ask_send_locked(&r.ask, ZKL_ASK_SET, list[i].node, r.kept[i],
                                  r.kept_len[i], i);
      else if (zkl__node_keeps_data(strrchr(list[i].node, '/') + 1))
        continue; /* it left before its read */
      else
        rc = zkl__ask_send_locked(&r.ask, ZKL_ASK_SET, list[i].node,
                                  REVOKE_DATA, (int)strlen(REVOKE_DATA), i);
    }
    /* Every write sent is waited for, even after a refusal. */
    i = zkl__ask_wait_locked(&r.ask);
    if (rc == ZKL_OK)
      rc = i;
    if (rc == ZKL_OK && r.asked == 0)
      rc = ZKL_ENOTHELD; /* nobody holds, or they left meanwhile */
    zkl__ask_destroy(&r.ask);
  }
  for (i = 0; r.kept && i < count; i++)
    free(r.kept[i]);
  free(r.kept);
  free(r.kept_len);
  if (list)
    zkl_name_list_free(list);
  return rc;
}

int zkl_name_revoke(zkl_session *s, const char *name, const char *node) {
  if (s && ZKL_REMOTE_SESSION(s))
    return zkl__remote_revoke(s, name, node);
  zkl_ask_retry t;
  int rc;
  if (!s || zkl__validate_name(name) != ZKL_OK ||
      (node && !contender_name(node)))
    return ZKL_EINVAL;
  if ((rc = zkl__ask_enter(s)) != ZKL_OK)
    return rc;
  /* A lost try asks again from the listing: a holder whose write went
   * through before the loss is asked twice, which its callback may hear
   * twice (a request, not an order: the same either way). */
  zkl__ask_retry_init_locked(s, &t);
  do
    rc = revoke_locked(s, name, node);
  while (zkl__ask_again_locked(s, &t, &rc));
  zkl__ask_leave(s);
  return rc;
}

int zkl_lock_on_revoke(zkl_lock *l, zkl_revoke_cb cb, void *arg) {
  if (l && ZKL_REMOTE_LOCK(l))
    return zkl__remote_on_revoke(l, cb, arg);
  zkl_session *s;
  int rc = ZKL_OK;
  if (!l)
    return ZKL_EINVAL;
  s = zkl__lock_session(l);
  pthread_mutex_lock(&s->mu);
  if (s->closing)
    rc = ZKL_ECLOSED;
  else
    zkl__lock_set_revoke_locked(l, cb, arg);
  pthread_mutex_unlock(&s->mu);
  return rc;
}
