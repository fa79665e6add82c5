/* SPDX-License-Identifier: Apache-2.0 */
/*
 * together.c - nodes made together: the attempt of a recipe with
 * ZKL_MAKE_PARTS_TOGETHER (a multi-lock's whole) makes no node of its own,
 * but one per part, by one transaction under one prefix. The states are
 * the engine's (engine.c, attempt.h); this file is what each does here:
 *
 *   CREATING    the parents of every part's queue (when asked: a
 *               transaction refused with ZNONODE, 3 rounds at most), then
 *               one zoo_multi of creates (a refusal fails the acquire, and
 *               by atomicity nothing was made; the refused name is kept:
 *               zkl_lock.refused)
 *   RECOVERING  its reply was lost: a write, then every queue listed for
 *               the prefix (zkl__together_recover_locked says why the write
 *               goes first), then the first node read: adopted if this
 *               session owns it (rule 6 of docs/recipe.md)
 *   PARTS       the token's getData (the first node's czxid: every node
 *               of one transaction has it), sent before each part's
 *               attempt is adopted with its node known (NEW -> LISTING):
 *               each waits in its queue by its own rule and tells its end
 *               through a hook. Every part holding and the token known:
 *               HELD. A part whose hold ends meanwhile fails the acquire
 *               (ZKL_ELOST: zkl__attempt_part_ended_locked)
 *   HELD        a part's loss is the whole's
 *   RELEASING   one zoo_multi of deletes; the parts end as released
 *               without deleting (deleting_parts)
 *   ENDING      the nodes not yet handed to a part deleted, the parts let
 *               go (an acquiring part is cancelled: its ending deletes its
 *               node; a held one is released)
 *
 * Why no deadlock: all the nodes of one transaction share its zxid, and in
 * every parent sequence numbers follow zxids. So every queue orders the
 * contenders it has in common the same way, a contender only ever waits for
 * contenders created before it, and the wait-for graph has no cycle,
 * whatever order callers name their locks in.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attempt.h"

static zkl_lock *part_of(const zkl_attempt *att, int i) {
  return att->l->parts[i];
}

/* Deletions are ours to send: not when the session's end takes the nodes
 * (as ENDING's). */
static bool deletes_wanted(const zkl_session *s) {
  return !s->dead && !s->closed && !(s->closing && s->owns_handle);
}

static void forget_nodes(zkl_attempt *att) {
  int i;
  for (i = 0; att->nodes && i < att->l->n_parts; i++) {
    free(att->nodes[i]);
    att->nodes[i] = NULL;
  }
}

/* Deletes the nodes made for parts that never got them. */
static void delete_unadopted_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  char path[ZKL_PATH_MAX];
  int i;
  for (i = 0; att->nodes && i < att->l->n_parts; i++)
    if (att->nodes[i] && deletes_wanted(s)) {
      snprintf(path, sizeof path, "%s/%s", part_of(att, i)->queue,
               att->nodes[i]);
      zkl__cleanup_delete_locked(s, path);
    }
  forget_nodes(att);
}

/* Whatever a transaction with this prefix may have made, in every queue. */
static void delete_prefix_locked(zkl_attempt *att, const char *prefix) {
  zkl_session *s = sess(att);
  int i;
  if (!deletes_wanted(s))
    return;
  for (i = 0; i < att->l->n_parts; i++)
    zkl__cleanup_prefix_locked(s, part_of(att, i)->queue, prefix);
}

/* What a transaction does. */
enum txn_kind {
  T_CREATE,  /* makes every part's node: the enqueue */
  T_RELEASE, /* deletes every node: the whole's release */
  T_UNDO,    /* deletes what a T_CREATE made for an attempt that moved on */
  T_ORDER    /* a check of "/": a write that the recovery's listings follow
                (zkl__together_recover_locked) */
};

/* One transaction in flight, a request of its attempt. */
typedef struct txn {
  zkl_attempt *att; /* referenced (zkl__attempt_req_begin_locked) */
  unsigned round;
  enum txn_kind kind;
  int count;
  char prefix[ZKL_PREFIX_MAX];
  zoo_op_t *ops;
  zoo_op_result_t *results;
  char (*paths)[ZKL_PATH_MAX]; /* the ops' paths */
  char (*made)[ZKL_PATH_MAX];  /* T_CREATE: the paths made */
  char data[sizeof((zkl_session *)0)->owner_data + ZKL_INFO_MAX + 8];
} txn;

static void txn_free(txn *t) {
  if (!t)
    return;
  free(t->ops);
  free(t->results);
  free(t->paths);
  free(t->made);
  free(t);
}

static txn *txn_new(zkl_attempt *att, int count, enum txn_kind kind) {
  txn *t = calloc(1, sizeof *t);
  bool creates = kind == T_CREATE;
  if (!t)
    return NULL;
  t->att = att;
  t->round = att->round;
  t->count = count;
  t->kind = kind;
  t->ops = calloc((size_t)count, sizeof *t->ops);
  t->results = calloc((size_t)count, sizeof *t->results);
  t->paths = calloc((size_t)count, sizeof *t->paths);
  t->made = creates ? calloc((size_t)count, sizeof *t->made) : NULL;
  if (!t->ops || !t->results || !t->paths || (creates && !t->made)) {
    txn_free(t);
    return NULL;
  }
  return t;
}

static void created_together_locked(txn *t, int rc);
static void released_together_locked(txn *t, int rc);
static void undone_locked(txn *t, int rc);

static void txn_done_locked(zkl_req *r, const zkl_answer *a) {
  txn *t = r->owner;
  zkl_attempt *att = t->att;
  att->pending--;
  if (t->kind == T_CREATE)
    created_together_locked(t, a->rc);
  else if (t->kind == T_RELEASE)
    released_together_locked(t, a->rc);
  else if (t->kind == T_UNDO)
    undone_locked(t, a->rc);
  /* T_ORDER: any answer will do (see zkl__together_recover_locked) */
  txn_free(t);
  zkl__att_maybe_deliver_locked(att);
  zkl__attempt_unref_locked(att); /* the request's: may free the attempt */
}

/* Sends t; on ZKL_OK its completion owns it. */
static int txn_send_locked(txn *t) {
  zkl_session *s = sess(t->att);
  zkl_req *r = zkl__req_new_locked(s, ZKL_RQ_MULTI_LOCK);
  int rc;
  if (!r)
    return ZKL_ENOMEM;
  r->owner = t;
  r->answered_locked = txn_done_locked;
  zkl__attempt_req_begin_locked(t->att);
  zkl__lease_tag_locked(s, r, ZKL_PROOF_WRITE);
  rc = zkl__safe_amulti(s->zh, t->count, t->ops, t->results, zkl__on_void, r);
  if (rc == ZOK)
    return ZKL_OK;
  zkl__req_abort_locked(r);
  return zkl__att_req_refused_locked(t->att,
                                     rc == ZINVALIDSTATE ? ZKL_EEXPIRED : rc);
}

/* The name whose queue needs the parent at path (the first, when several
 * share it). */
static const char *together_name_under(const zkl_attempt *att, const char *path) {
  size_t n = strlen(path);
  int i;
  for (i = 0; i < att->l->n_parts; i++) {
    const char *q = part_of(att, i)->queue;
    if (strncmp(q, path, n) == 0 && (q[n] == '\0' || q[n] == '/'))
      return part_of(att, i)->name;
  }
  return NULL;
}

/* The parents of every part's queue, as containers (the engine's own
 * parents' loop, over each queue). */
static int send_parents_together_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  char path[ZKL_PATH_MAX];
  int rc = ZKL_OK, i;
  size_t j, qlen;
  for (i = 0; i < att->l->n_parts && rc == ZKL_OK; i++) {
    const char *q = part_of(att, i)->queue;
    qlen = strlen(q);
    for (j = zkl__first_parent(q); j <= qlen && rc == ZKL_OK; j++) {
      if (j < qlen && q[j] != '/')
        continue;
      memcpy(path, q, j);
      path[j] = '\0';
      zkl__attempt_req_begin_locked(att);
      rc = zkl__io_create_locked(
          s, ZKL_RQ_PARENT, path, NULL, -1,
          strcmp(path, ZKL_ROOT) == 0 ? &ZOO_OPEN_ACL_UNSAFE
                                      : zkl__acl(att->l->acl),
          ZOO_CONTAINER, zkl__att_io_ops, att, att->round);
      if (rc != ZKL_OK)
        rc = zkl__att_req_refused_locked(att, rc);
    }
  }
  return rc;
}

/* CREATING: the parents (when asked: a session's requests are applied in
 * order), then the transaction that makes every part's node. */
static void together_create_locked(zkl_attempt *att) {
  zkl_lock *l = att->l;
  zkl_session *s = l->s;
  txn *t = NULL;
  int rc = ZKL_OK, len, i;
  forget_nodes(att);
  att->parent_rc = 0;
  if (att->with_parents)
    rc = send_parents_together_locked(att);
  if (rc == ZKL_OK && !(t = txn_new(att, l->n_parts, T_CREATE)))
    rc = ZKL_ENOMEM;
  if (rc != ZKL_OK) {
    zkl__att_end_locked(att, END_FAIL, rc);
    return;
  }
  memcpy(t->prefix, att->prefix, sizeof t->prefix);
  /* who we are, for zkl_name_list() and zklock --list */
  len = snprintf(t->data, sizeof t->data, "%s%s%s%s", s->owner_data,
                 l->info ? "info=" : "", l->info ? l->info : "",
                 l->info ? "\n" : "");
  for (i = 0; i < l->n_parts; i++) {
    snprintf(t->paths[i], ZKL_PATH_MAX, "%s/%s", part_of(att, i)->queue,
             att->prefix);
    zoo_create_op_init(&t->ops[i], t->paths[i], t->data, len, zkl__acl(l->acl),
                       ZOO_EPHEMERAL_SEQUENTIAL, t->made[i], ZKL_PATH_MAX);
  }
  att->own = OWN_CREATING;
  if ((rc = txn_send_locked(t)) != ZKL_OK) {
    txn_free(t);
    att->own = OWN_NONE;
    zkl__att_end_locked(att, END_FAIL, rc);
  }
}

/* Deletes the nodes that `made` (a T_CREATE) made, in one transaction of
 * deletes counted as a request of att: an ending attempt is told only once
 * they are gone. Deleting them in the background instead (cleanups) let
 * ECANCELED and ETIMEDOUT come while they were still there: a test that
 * looked then found them, and so would the caller's next acquire, behind
 * its own leftover (issue 24). When that cannot be sent (disconnected, no
 * memory), they go in the background, and the attempt, disconnected, is
 * told at once as every attempt is. */
static void undo_locked(zkl_attempt *att, const txn *made) {
  zkl_session *s = sess(att);
  txn *t = s->connected ? txn_new(att, made->count, T_UNDO) : NULL;
  int i;
  for (i = 0; t && i < made->count; i++) {
    memcpy(t->paths[i], made->made[i], ZKL_PATH_MAX);
    zoo_delete_op_init(&t->ops[i], t->paths[i], -1);
  }
  if (t && txn_send_locked(t) == ZKL_OK)
    return; /* undone_locked */
  txn_free(t);
  for (i = 0; i < made->count; i++)
    zkl__cleanup_delete_locked(s, made->made[i]);
}

/* A node already gone (deleted by someone: ZNONODE fails the whole
 * transaction), a lost reply, a refusal: each that may be left is deleted
 * on its own, in the background (retried after a reconnect). */
static void undone_locked(txn *t, int rc) {
  zkl_session *s = sess(t->att);
  int i;
  if (rc != ZOK && !zkl__is_session_over(rc) && deletes_wanted(s))
    for (i = 0; i < t->count; i++)
      zkl__cleanup_delete_locked(s, t->paths[i]);
}

static bool any_result(const txn *t, int err) {
  int i;
  for (i = 0; i < t->count; i++)
    if (t->results[i].err == err)
      return true;
  return false;
}

/* The name whose create the transaction failed on. ZooKeeper answers a
 * failed multi with ZOK for the ops before the one that failed and
 * ZRUNTIMEINCONSISTENCY for those after it; op i is part i's create. */
static const char *refused_name(const zkl_attempt *att, const txn *t) {
  int i;
  for (i = 0; i < t->count && i < att->l->n_parts; i++)
    if (t->results[i].err != ZOK && t->results[i].err != ZRUNTIMEINCONSISTENCY)
      return part_of(att, i)->name;
  return NULL;
}

/* A fresh prefix, for a transaction that must not meet an older one's
 * nodes (another session's, as in CURATOR-498), and CREATING again. */
static void create_fresh_locked(zkl_attempt *att) {
  forget_nodes(att);
  att->own = OWN_NONE;
  att->with_parents = false;
  if (zkl__att_make_prefix(att) != ZKL_OK)
    zkl__att_end_locked(att, END_FAIL, ZKL_ESYSTEM);
  else
    GO(att, ZKL_AS_CREATING);
}

static void created_together_locked(txn *t, int rc) {
  zkl_attempt *att = t->att;
  zkl_session *s = sess(att);
  int i;
  if (att->state != ZKL_AS_CREATING || t->round != att->round) {
    /* The attempt moved on (cancelled, timed out, failed) while the
     * transaction was out: undo what it made, as the attempt's own
     * request, which the ending attempt waits for. */
    if (rc == ZOK && deletes_wanted(s))
      undo_locked(att, t);
    else if (zkl__is_connection_loss(rc))
      delete_prefix_locked(att, t->prefix);
    return;
  }
  att->own = OWN_NONE; /* the nodes, if made, are the parts' to be */
  if (rc == ZOK) {
    for (i = 0; i < t->count; i++) {
      const char *slash = strrchr(t->made[i], '/');
      att->nodes[i] = strdup(slash ? slash + 1 : t->made[i]);
    }
    for (i = 0; i < t->count; i++)
      if (!att->nodes[i]) {
        forget_nodes(att);
        for (i = 0; i < t->count; i++)
          zkl__cleanup_delete_locked(s, t->made[i]);
        zkl__att_end_locked(att, END_FAIL, ZKL_ENOMEM);
        return;
      }
    att->czxid_known = false;
    GO(att, ZKL_AS_PARTS);
  } else if (zkl__is_connection_loss(rc)) {
    att->own = OWN_UNKNOWN;       /* a try-once ends, deleting by prefix */
    zkl__att_suspend_locked(att); /* recovered at the reconnect */
  } else if (zkl__is_session_over(rc)) {
    /* the session's end fails the attempt */
  } else if (rc == ZNONODE || any_result(t, ZNONODE)) {
    /* No parent (first use, or a container reaped since): the parents,
     * then the transaction again, a few times in case they keep
     * vanishing. */
    if (att->parent_rc)
      zkl__att_end_locked(att, END_FAIL,
                          att->parent_rc); /* l->refused: its name */
    else if (att->parent_rounds++ < 3) {
      att->with_parents = true;
      GO(att, ZKL_AS_CREATING);
    } else
      zkl__att_end_locked(att, END_FAIL, ZNONODE);
  } else {
    att->l->refused = refused_name(att, t);
    zkl__att_end_locked(att, END_FAIL,
                        rc); /* refused (ZNOAUTH...): nothing made */
  }
}

/* ---- the parts */

/* Whether every part holds right now. The parts are asked, not counted:
 * a part's grant is told once, and its hold may end afterwards (a break,
 * the lease), which fails the whole (zkl__attempt_part_ended_locked). A
 * part granted but waiting for a fresher lease (CONFIRMING) does not
 * hold. */
static bool parts_hold(const zkl_attempt *att) {
  int i;
  for (i = 0; i < att->l->n_parts; i++)
    if (!part_of(att, i)->att || part_of(att, i)->att->state != ZKL_AS_HELD)
      return false;
  return true;
}

/* The whole is granted only while every part holds. */
static void maybe_grant_parts_locked(zkl_attempt *att) {
  if (att->czxid_known && att->state == ZKL_AS_PARTS && parts_hold(att))
    GO(att, ZKL_AS_HELD);
}

/* A part's acquire ended (ctx: the whole's attempt). Each one started is
 * counted as a request of the whole's attempt until here. */
static void part_acquired_locked(void *ctx, int rc, int64_t token) {
  zkl_attempt *att = ctx;
  int i;
  (void)token;
  if (att->state == ZKL_AS_PARTS) {
    if (rc == ZKL_OK) {
      maybe_grant_parts_locked(att);
    } else {
      for (i = 0; rc == ZKL_EKIND && i < att->l->n_parts; i++)
        if (part_of(att, i)->other_kind)
          att->l->other_kind = part_of(att, i)->other_kind;
      zkl__att_end_locked(att, END_FAIL, rc);
    }
  }
  /* (else the whole is ending: it let go of the parts already) */
  zkl__attempt_req_end_locked(att);
}

static void part_let_go_locked(void *ctx, int rc, int64_t token) {
  (void)rc;
  (void)token;
  zkl__attempt_req_end_locked(ctx);
}

/* Ends what the parts do: acquiring ones are cancelled (their ending
 * deletes their nodes), held ones released; counted, with a target, when
 * the whole's attempt is to wait for them. */
static void let_go_parts_locked(zkl_attempt *att, bool counted) {
  int i;
  for (i = 0; i < att->l->n_parts; i++) {
    zkl_lock *p = part_of(att, i);
    if (!p->att)
      continue;
    if (acquiring(p->att->state)) {
      zkl__attempt_event_locked(p->att, ZKL_EV_CANCEL, ZKL_ECANCELED, NULL);
    } else if (p->att->state == ZKL_AS_STOPPING) {
      /* Kept after the lease's loss until the whole let go: now. */
      zkl__attempt_event_locked(p->att, ZKL_EV_RELEASE, 0, NULL);
    } else if (p->att->state == ZKL_AS_HELD) {
      zkl_target t = {0};
      if (counted) {
        t.hook_locked = part_let_go_locked;
        t.hook_ctx = att;
        zkl__attempt_req_begin_locked(att);
      }
      zkl__attempt_event_locked(p->att, ZKL_EV_RELEASE, 0, &t);
    }
  }
}

static int together_send_token_locked(zkl_attempt *att) {
  int rc;
  att->czxid_lost = false;
  zkl__attempt_req_begin_locked(att);
  rc = zkl__io_get_locked(sess(att), ZKL_RQ_OWN_GET, att->first,
                          zkl__att_io_ops, att, att->round);
  return rc == ZKL_OK ? rc : zkl__att_req_refused_locked(att, rc);
}

/* PARTS: the nodes are made: the token's getData first, then each part in
 * its queue, all in one round trip. */
static void together_parts_locked(zkl_attempt *att) {
  int rc, i;
  snprintf(att->first, sizeof att->first, "%s/%s", part_of(att, 0)->queue,
           att->nodes[0]);
  if (!att->czxid_known &&
      (rc = together_send_token_locked(att)) != ZKL_OK) {
    zkl__att_end_locked(att, END_FAIL, rc);
    return;
  }
  for (i = 0; i < att->l->n_parts; i++) {
    zkl_target t = {0};
    char *node = att->nodes[i];
    t.hook_locked = part_acquired_locked;
    t.hook_ctx = att;
    att->nodes[i] = NULL; /* the part's, if adopted */
    zkl__attempt_req_begin_locked(att);
    rc = zkl__attempt_adopt_locked(part_of(att, i), att->prefix, node,
                                   att->try_once ? 0 : -1, &t);
    if (rc != ZKL_OK) {
      att->nodes[i] = node; /* deleted by ENDING */
      zkl__attempt_req_end_locked(att);
      zkl__att_end_locked(att, END_FAIL, rc);
      return;
    }
    free(node);
    if (att->state != ZKL_AS_PARTS)
      return; /* a part failed at once, and the whole with it */
  }
}

static void together_on_token_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_session *s = sess(att);
  int rc;
  if (rp->rc == ZOK) {
    att->czxid = rp->stat->czxid;
    att->czxid_known = true;
    maybe_grant_parts_locked(att);
  } else if (zkl__is_connection_loss(rp->rc)) {
    att->czxid_lost = true; /* sent again at the reconnect */
    if (s->connected && !s->dead &&
        (rc = together_send_token_locked(att)) != ZKL_OK)
      zkl__att_end_locked(att, END_FAIL, rc);
  } else if (rp->rc != ZNONODE && !zkl__is_session_over(rp->rc)) {
    zkl__att_end_locked(att, END_FAIL, rp->rc);
  }
  /* ZNONODE: the part whose node it is hears it too, and fails */
}

void zkl__attempt_part_ended_locked(zkl_lock *l, zkl_lock *p, int reason) {
  zkl_session *s = l->s;
  /* Only a part adopted by this attempt of the whole counts: the ending
   * attempt is detached first, so a part that still has one ended an
   * older attempt; and before the adoption (PARTS) every part that ends
   * is one the last attempt let go of, whose release was answered only
   * after this acquire began (the test saw a new acquire fail with
   * ZKL_ELOST when the parts' deletes were answered late). While the
   * whole waits for its other parts, that part held for it, and the whole
   * cannot be granted with it gone: its acquire fails, whatever ended the
   * part's hold (its node deleted or broken, the lease, the session):
   * ZKL_ELOST (the session's end code when the session is over,
   * ZKL_ECLOSED when it closes: the whole hears that too, in whichever
   * order). It was never granted, so there is no lost callback; it is
   * told once its other nodes are deleted, as every failed acquire is.
   * While the whole holds, a part's loss is the whole's (the lease's
   * excepted: that reaches the whole itself, with the timer's notices); a
   * part let go then is the whole's own doing (its release, the
   * session's close). */
  if (!l->att || p->att)
    return;
  if (l->att->state == ZKL_AS_PARTS)
    zkl__att_end_locked(l->att, END_FAIL,
                        s->dead      ? s->dead
                        : s->closing ? ZKL_ECLOSED
                                     : ZKL_ELOST);
  else if (l->att->state == ZKL_AS_HELD && reason != 0 &&
           reason != ZKL_LOST_LEASE_EXPIRED)
    zkl__attempt_event_locked(l->att, ZKL_EV_PART_LOST, reason, NULL);
}

/* ---- recovery */

/* A write, sent first on the connection the listings go out on: a
 * transaction with one check of "/", which changes nothing. Its answer,
 * whatever it is, does not matter: only its place in the order does. */
static int send_order_locked(zkl_attempt *att) {
  txn *t = txn_new(att, 1, T_ORDER);
  int rc;
  if (!t)
    return ZKL_ENOMEM;
  snprintf(t->paths[0], ZKL_PATH_MAX, "/");
  zoo_check_op_init(&t->ops[0], t->paths[0], -1);
  if ((rc = txn_send_locked(t)) != ZKL_OK)
    txn_free(t);
  return rc;
}

/* After a lost reply (the reconnect made): is the transaction there? Every
 * queue is listed for its prefix. If it is ever applied, these listings
 * must see its nodes: else they are nobody's (the transaction goes again,
 * and the lost one's nodes stay until the session ends, blocking their
 * queues once ours are gone). So a write goes first (send_order_locked),
 * the listings right behind it, for no round trip more; then:
 * - The listings see everything applied before that write. Writes are
 *   ordered by the leader's PrepRequestProcessor (one thread, which gives
 *   them their zxids), every server applies them in zxid order, and
 *   answers a session's requests in order (its CommitProcessor keeps a
 *   session's reads behind its pending write; a standalone server's
 *   pipeline is first in, first out).
 * - The write went out after the new connection's handshake, which the
 *   server answers only once the leader has revalidated the session and
 *   made that server the session's owner (Leader.revalidateSession;
 *   LeaderZooKeeperServer.revalidateSession for the leader's own clients;
 *   SessionTrackerImpl.setOwner).
 * - PrepRequestProcessor checks every create against the session's owner
 *   (checkSession). The lost transaction, if the leader prepares it after
 *   that and it came through another server, fails whole
 *   (ZSESSIONMOVED): nothing. If the leader prepared it before, its zxid
 *   is below the write's, so the listings see it.
 * - Through the same server as before (the same follower, the leader, a
 *   standalone server) the owner does not change, but the server closed
 *   the old connection before it answered the handshake
 *   (ZooKeeperServer.processConnectRequest), dropping what it had not yet
 *   read; what it had read is in its pipeline ahead of the write.
 * Without the write, a listing served by a server that had not yet
 * applied the transaction missed it: a follower other than the one the
 * transaction went through knows it only as the leader's proposal until
 * the commit comes, and answers a read of the session at once. (The
 * follower it went through keeps the session's reads behind it, and so
 * does the leader, whose CommitProcessor gets the requests followers
 * forward too: ProposalRequestProcessor.) That is the window issue 24
 * named: the transaction went again, and the lost one's nodes, applied a
 * moment later, stayed until the session ended when the attempt ended
 * before a part listed its queue (a cancel while it was sent again).
 * tests/test_late_create shows both, the links of an ensemble slowed.
 * What the order does not cover: a request that one of the server's I/O
 * threads read from the old connection just as another handled the
 * reconnect's handshake, and handed on after the write
 * (ZooKeeperServer.processPacket is not atomic with the close), a race
 * inside the server of a few instructions against two round trips of the
 * client. Its nodes would have the prefix the transaction is sent again
 * with: a part that lists its queue afterwards deletes them as
 * duplicates; otherwise they stay until the session ends. */
static void together_recover_locked(zkl_attempt *att) {
  int i, rc;
  forget_nodes(att);
  att->answers = 0;
  if ((rc = send_order_locked(att)) != ZKL_OK) {
    zkl__att_end_locked(att, END_FAIL, rc);
    return;
  }
  for (i = 0; i < att->l->n_parts; i++) {
    zkl__attempt_req_begin_locked(att);
    rc = zkl__io_list_locked(sess(att), ZKL_RQ_LIST, part_of(att, i)->queue,
                             zkl__att_io_ops, att, att->round);
    if (rc != ZKL_OK) {
      zkl__att_end_locked(att, END_FAIL, zkl__att_req_refused_locked(att, rc));
      return;
    }
  }
}

static void found_all_locked(zkl_attempt *att) {
  char path[ZKL_PATH_MAX];
  int i, rc;
  if (att->nodes[0]) {
    snprintf(path, sizeof path, "%s/%s", part_of(att, 0)->queue, att->nodes[0]);
    zkl__attempt_req_begin_locked(att);
    rc = zkl__io_get_locked(sess(att), ZKL_RQ_RECOVER_GET, path,
                            zkl__att_io_ops, att, att->round);
    if (rc != ZKL_OK)
      zkl__att_end_locked(att, END_FAIL, zkl__att_req_refused_locked(att, rc));
    return;
  }
  for (i = 0; i < att->l->n_parts && !att->nodes[i]; i++)
    ;
  if (i < att->l->n_parts) {
    /* A node without the first: not ours (a transaction makes all or
     * none); start over under a fresh prefix, leaving it alone. */
    create_fresh_locked(att);
  } else {
    att->own = OWN_NONE; /* the transaction never happened */
    att->with_parents = false;
    GO(att, ZKL_AS_CREATING);
  }
}

static void together_on_listing_locked(zkl_attempt *att, const zkl_reply *rp) {
  size_t plen = strlen(att->prefix);
  int i, j;
  if (rp->rc != ZOK && rp->rc != ZNONODE) {
    zkl__att_triage_locked(att, rp->rc); /* a lost connection: again after it */
    return;
  }
  for (i = 0; i < att->l->n_parts && strcmp(part_of(att, i)->queue, rp->path);
       i++)
    ;
  if (i == att->l->n_parts)
    return;
  for (j = 0; rp->rc == ZOK && j < rp->children->count && !att->nodes[i]; j++)
    if (strncmp(rp->children->data[j], att->prefix, plen) == 0 &&
        !(att->nodes[i] = strdup(rp->children->data[j]))) {
      zkl__att_end_locked(att, END_FAIL, ZKL_ENOMEM);
      return;
    }
  if (++att->answers == att->l->n_parts)
    found_all_locked(att);
}

static void together_on_found_locked(zkl_attempt *att, const zkl_reply *rp) {
  zkl_session *s = sess(att);
  int i;
  if (rp->rc == ZOK && rp->stat->ephemeralOwner == s->session_id) {
    for (i = 0; i < att->l->n_parts && att->nodes[i]; i++)
      ;
    if (i < att->l->n_parts) { /* cannot be, by atomicity: do not trust it */
      delete_unadopted_locked(att);
      create_fresh_locked(att);
      return;
    }
    att->czxid = rp->stat->czxid; /* the transaction's, shared by all */
    att->czxid_known = true;
    att->own = OWN_NONE; /* the parts' to be */
    GO(att, ZKL_AS_PARTS);
  } else if (rp->rc == ZOK || rp->rc == ZNONODE) {
    create_fresh_locked(att); /* not ours (CURATOR-498), or gone */
  } else {
    zkl__att_triage_locked(att, rp->rc);
  }
}

/* ---- release, end */

/* RELEASING: the parts end without deleting, then one transaction deletes
 * every node. */
static void together_release_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  int n_parts = att->l->n_parts;
  txn *t = txn_new(att, n_parts, T_RELEASE);
  char path[ZKL_PATH_MAX];
  int n = 0, i;
  att->deleting_parts = true;
  for (i = 0; i < n_parts; i++) {
    zkl_lock *p = part_of(att, i);
    zkl_target none = {0};
    if (!p->att || p->att->state != ZKL_AS_HELD)
      continue;
    if (zkl__lock_node_path_locked(p, path, sizeof path) == ZKL_OK) {
      if (t) {
        memcpy(t->paths[n], path, sizeof path);
        zoo_delete_op_init(&t->ops[n], t->paths[n], -1);
        n++;
      } else {
        zkl__cleanup_delete_locked(s, path); /* no memory for one */
      }
    }
    zkl__attempt_event_locked(p->att, ZKL_EV_RELEASE, 0, &none);
  }
  att->deleting_parts = false;
  if (t && n > 0 && s->connected) {
    t->count = n;
    if (txn_send_locked(t) == ZKL_OK)
      return; /* released_together_locked ends it */
  }
  /* Disconnected, or refused at the call: they go at the reconnect, or
   * with the session. */
  for (i = 0; t && i < n; i++)
    zkl__cleanup_delete_locked(s, t->paths[i]);
  txn_free(t);
  zkl__att_end_locked(att, END_RELEASED, ZKL_OK);
}

static void released_together_locked(txn *t, int rc) {
  zkl_attempt *att = t->att;
  zkl_session *s = sess(att);
  int i;
  /* One node already gone (deleted by someone: ZNONODE fails the whole
   * transaction), a lost reply, a refusal: delete each on its own. */
  if (rc != ZOK && !zkl__is_session_over(rc) && !s->dead)
    for (i = 0; i < t->count; i++)
      zkl__cleanup_delete_locked(s, t->paths[i]);
  if (att->state != ZKL_AS_RELEASING)
    return;
  /* A node gone before the release: that part's hold was lost while no
   * watch was on it yet (zkl_lock_set_watch_after()); so is the whole. */
  if (rc == ZNONODE)
    zkl__att_lost_at_release_locked(att);
  else
    zkl__att_end_locked(att, END_RELEASED, ZKL_OK);
}


/* ENDING: what the transaction made and no part got goes (an unknown
 * outcome: by prefix, in every queue; a transaction in flight: its reply
 * undoes it), and the parts are let go, the ending waiting for them. */
static void together_end_locked(zkl_attempt *att) {
  if (att->own == OWN_UNKNOWN)
    delete_prefix_locked(att, att->prefix);
  delete_unadopted_locked(att);
  let_go_parts_locked(att, true);
}

/* Any attempt of the whole ended: parts still held (after a loss) are
 * released, unless the session's end or close takes them anyway. */
static void together_ended_locked(zkl_attempt *att) {
  zkl_session *s = sess(att);
  if (!s->dead && !s->closing)
    let_go_parts_locked(att, false);
  forget_nodes(att);
}

const struct zkl_together_ops zkl__together_ops = {
    .create_locked = together_create_locked,
    .recover_locked = together_recover_locked,
    .parts_locked = together_parts_locked,
    .release_locked = together_release_locked,
    .end_locked = together_end_locked,
    .ended_locked = together_ended_locked,
    .name_under = together_name_under,
    .on_listing_locked = together_on_listing_locked,
    .on_found_locked = together_on_found_locked,
    .on_token_locked = together_on_token_locked,
    .send_token_locked = together_send_token_locked,
};
