/* SPDX-License-Identifier: Apache-2.0 */
/*
 * revoke.c - asking holders to let go, as Curator's Revoker does: the bytes
 * __REVOKE__ written into a holder's node. The holder already keeps a data
 * watch on its own node (engine.c), so the request reaches it at no cost of
 * a new watch, and its revoke callback decides what to do.
 *
 * Whom to ask is read as zkl_participants() reads it (participants.c,
 * through the registry): every holder by its kind's rule, or the contender
 * named, wherever under the name it waits, with the downgraded readers
 * that hold by riding on it (kinds.h: after a downgrade the write node
 * stays, and nobody watches it any more; the read side does). The listing
 * follows a sync, so that a server behind the leader cannot hide a holder
 * (participants.c). Nothing else under the name is ever written.
 */
#include "config.h"

#include <string.h>

#include "ask.h"
#include "engine.h"

#define REVOKE_DATA "__REVOKE__"

typedef struct revoking {
  zkl_ask ask; /* first: the answers come to it */
  int asked;   /* writes that found their node */
} revoking;

static void written_locked(zkl_ask *a, int index, const zkl_reply *rp) {
  revoking *r = (revoking *)a;
  (void)index;
  if (rp->rc == ZOK)
    r->asked++;
  else if (rp->rc != ZNONODE && a->rc == ZKL_OK) /* ZNONODE: it left */
    a->rc = zkl__ask_code(rp->rc);
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

int zkl_revoke(zkl_session *s, const char *name, const char *node) {
  zkl_participant *list = NULL;
  revoking r;
  int count = 0, rc, i;
  if (!s || zkl__validate_name(name) != ZKL_OK ||
      (node && !contender_name(node)))
    return ZKL_EINVAL;
  if ((rc = zkl__ask_enter(s)) != ZKL_OK)
    return rc;
  rc = zkl__participants_locked(s, name, &list, &count, true);
  if (rc == ZKL_OK)
    rc = zkl__ask_init(&r.ask, s, written_locked);
  if (rc == ZKL_OK) {
    r.asked = 0;
    for (i = 0; i < count; i++) {
      const char *child = strrchr(list[i].node, '/') + 1;
      bool asked = node ? strcmp(child, node) == 0 ||
                              (list[i].holds && zkl__rides_on(child, node))
                        : list[i].holds;
      if (!asked)
        continue;
      if (zkl__ask_send_locked(&r.ask, ZKL_ASK_SET, list[i].node, REVOKE_DATA,
                               (int)strlen(REVOKE_DATA), i) != ZKL_OK)
        break;
    }
    rc = zkl__ask_wait_locked(&r.ask);
    if (rc == ZKL_OK && r.asked == 0)
      rc = ZKL_ENOTHELD; /* nobody holds, or they left meanwhile */
    zkl__ask_destroy(&r.ask);
  }
  zkl__ask_leave(s);
  if (list)
    zkl_participants_free(list);
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
